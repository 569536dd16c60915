// Names of the spec enums as they appear in config JSON, and the small helpers declared
// beside them (element sizes, mixed precision, peak-FLOPS fallback).
#include "proteus/cluster_spec.h"
#include "proteus/model_spec.h"
#include "proteus/strategy_spec.h"
#include "proteus/training_spec.h"

namespace proteus {

const char* to_string(ModelKind kind) {
  switch (kind) {
    case ModelKind::Transformer:
      return "transformer";
    case ModelKind::Cnn:
      return "cnn";
    case ModelKind::Dlrm:
      return "dlrm";
    case ModelKind::Graph:
      return "graph";
  }
  return "?";
}

const char* to_string(MlpKind kind) {
  switch (kind) {
    case MlpKind::Gelu:
      return "gelu";
    case MlpKind::Swiglu:
      return "swiglu";
  }
  return "?";
}

const char* to_string(NormKind kind) {
  switch (kind) {
    case NormKind::LayerNorm:
      return "layernorm";
    case NormKind::RmsNorm:
      return "rmsnorm";
  }
  return "?";
}

const char* to_string(CnnArch arch) {
  switch (arch) {
    case CnnArch::AlexNet:
      return "alexnet";
    case CnnArch::Vgg19:
      return "vgg19";
    case CnnArch::ResNet50:
      return "resnet50";
    case CnnArch::InceptionV3:
      return "inception-v3";
  }
  return "?";
}

const char* to_string(MoeRouting routing) {
  return routing == MoeRouting::Dropless ? "dropless" : "capacity";
}

const char* to_string(IntraNodeKind kind) {
  switch (kind) {
    case IntraNodeKind::NvSwitch:
      return "nvswitch";
    case IntraNodeKind::NvLinkMesh:
      return "nvlink-mesh";
    case IntraNodeKind::PcieTree:
      return "pcie-tree";
  }
  return "?";
}

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::Fp32:
      return "fp32";
    case Precision::Tf32:
      return "tf32";
    case Precision::Fp16:
      return "fp16";
    case Precision::Bf16:
      return "bf16";
    case Precision::Fp8:
      return "fp8";
  }
  return "?";
}

const char* to_string(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::Adam:
      return "adam";
    case Optimizer::Sgd:
      return "sgd";
  }
  return "?";
}

bool zero_bubble_schedule(Schedule schedule) {
  return schedule == Schedule::ZbH1 || schedule == Schedule::ZbH2 || schedule == Schedule::ZbV;
}

const char* to_string(Schedule schedule) {
  switch (schedule) {
    case Schedule::GPipe:
      return "gpipe";
    case Schedule::OneFOneB:
      return "1f1b";
    case Schedule::Interleaved1F1B:
      return "interleaved-1f1b";
    case Schedule::ZbH2:
      return "zb-h2";
    case Schedule::ZbV:
      return "zb-v";
    case Schedule::DualPipeV:
      return "dualpipe-v";
    case Schedule::DualPipe:
      return "dualpipe";
    case Schedule::Explicit:
      return "explicit";
    case Schedule::ZbH1:
      return "zb-h1";
  }
  return "?";
}

const char* to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::None:
      return "none";
    case Recompute::Selective:
      return "selective";
    case Recompute::Full:
      return "full";
  }
  return "?";
}

const char* to_string(ZbPlan plan) { return plan == ZbPlan::Unit ? "unit" : "profiled"; }

ZbPlan default_zb_plan(Framework framework) {
  return framework == Framework::Megatron ? ZbPlan::Profiled : ZbPlan::Unit;
}

double activation_bytes(Precision precision) {
  switch (precision) {
    case Precision::Fp32:
    case Precision::Tf32:
      return 4;  // tf32 is a GEMM mode; tensors stay fp32 in memory
    case Precision::Fp16:
    case Precision::Bf16:
    case Precision::Fp8:
      return 2;  // Transformer Engine keeps bf16 copies of fp8 activations
  }
  return 4;
}

bool is_mixed_precision(Precision precision) {
  return precision == Precision::Fp16 || precision == Precision::Bf16 || precision == Precision::Fp8;
}

// A GPU without a fast path for a precision runs it at the next wider one:
// fp8 -> bf16 -> fp16 -> fp32 and tf32 -> fp32 (e.g. V100 has no bf16 or tf32 tensor cores,
// GTX 1080 Ti has no fast fp16).
double GpuSpec::peak_TFLOPS(Precision precision) const {
  switch (precision) {
    case Precision::Fp8:
      return peak_fp8_TFLOPS > 0 ? peak_fp8_TFLOPS : peak_TFLOPS(Precision::Bf16);
    case Precision::Bf16:
      return peak_bf16_TFLOPS > 0 ? peak_bf16_TFLOPS : peak_TFLOPS(Precision::Fp16);
    case Precision::Fp16:
      return peak_fp16_TFLOPS > 0 ? peak_fp16_TFLOPS : peak_fp32_TFLOPS;
    case Precision::Tf32:
      return peak_tf32_TFLOPS > 0 ? peak_tf32_TFLOPS : peak_fp32_TFLOPS;
    case Precision::Fp32:
      return peak_fp32_TFLOPS;
  }
  return peak_fp32_TFLOPS;
}

}  // namespace proteus
