#include "te_cp_ring.h"

namespace proteus {

namespace {

// A tensor of x bytes: copied (read, write), added in place (read both, write), merged by the
// output correction (read the step's output and `out`, write `out`), zero-filled (write).
double copy(double x) { return 2 * x; }
double add(double x) { return 3 * x; }
double merge(double x) { return 3 * x; }
double fill(double x) { return x; }

double forward_bytes(double o, double kv, int c, int r) {
  double bytes = copy(kv) + fill(o);  // torch.cat((k, v)), torch.empty_like(q).zero_()
  for (int i = 1; i < c; ++i)
    if (i <= r) bytes += copy(kv / 2);  // kv_inputs[i % 2][:, 0, ...].contiguous()
  for (int i = 0; i < c; ++i) bytes += i <= r ? merge(o) : merge(o / 2);  // out, or out[1]
  return bytes;
}

// dQ for step i: the branches of `if causal:` on dq in AttnFuncWithCP.backward.
double dq_bytes(double o, int c, int r, int i) {
  const int diagonal = c - r - 1;  // the step whose K/V is the rank's own
  if (i > diagonal) return add(o);
  if (i == diagonal) return r == c - 1 ? copy(o) : copy(o / 2) + add(o / 2);
  return i > 0 ? add(o / 2) : copy(o / 2);
}

// dK/dV for step i, accumulated into the buffer that travels the ring.
double dkv_bytes(double kv, int c, int r, int i) {
  if (i == c - 1) return r == 0 ? add(kv / 2) + copy(kv / 2) : add(kv);
  if (i >= c - r - 1) return i == 0 && r == c - 1 ? copy(kv / 2) : add(kv / 2);
  return i > 0 ? add(kv) : copy(kv);
}

double backward_bytes(double o, double kv, int c, int r) {
  double bytes = copy(kv);  // p2p_comm_buffers[0][0].copy_(kv)
  for (int i = 0; i < c; ++i) {
    // Steps before the last that met the first half of the K/V: that half made contiguous, and
    // the kernel's dK, dV are half-sized; otherwise whole.
    const bool half_kv = i != c - 1 && i >= c - r - 1;
    if (half_kv) bytes += copy(kv / 2);
    bytes += copy(half_kv ? kv / 2 : kv);  // torch.cat((dk_, dv_))
    bytes += dq_bytes(o, c, r, i) + dkv_bytes(kv, c, r, i);
  }
  return bytes;
}

}  // namespace

TeCpRingBytes te_cp_ring_bytes(double out_bytes, double kv_bytes, int ring) {
  TeCpRingBytes mean;
  if (ring <= 1) return mean;
  for (int r = 0; r < ring; ++r) {
    mean.forward += forward_bytes(out_bytes, kv_bytes, ring, r) / ring;
    mean.backward += backward_bytes(out_bytes, kv_bytes, ring, r) / ring;
  }
  return mean;
}

}  // namespace proteus
