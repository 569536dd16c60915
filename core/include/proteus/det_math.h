// Deterministic base-2 logarithm and power, from IEEE basic operations only (+, -, *, /,
// frexp, ldexp), so that native and WebAssembly builds give the same bits: glibc's and
// Emscripten's libm differ in the last bit of log/exp (docs/robustness.md, "Determinism").
// Measured tables interpolate in log space with these (cost/gemm_table.cpp).
#pragma once

namespace proteus {

// log2(x) for finite x > 0, within a few ulp of the exact value; x <= 0 gives -infinity
// (callers only pass positive sizes and throughputs).
double det_log2(double x);

// 2^y, within a few ulp of the exact value; saturates to 0 / infinity outside [-1074, 1024].
double det_exp2(double y);

}  // namespace proteus
