// CNN builders against torchvision: parameter counts (sum of p.numel() over parameters),
// multiply-accumulates of convolutions and linear layers (torchvision's model tables list
// them as "GFLOPS": AlexNet 0.71, VGG-19 19.63, ResNet-50 4.09, Inception-v3 5.71), and the
// module tree, dims and DAG structure the strategy and compiler rely on.
#include <doctest/doctest.h>

#include "proteus/error.h"
#include "proteus/op_graph.h"
#include "relative_approx.h"
#include "test_model_helpers.h"

using namespace proteus;
using namespace proteus::test_model;

namespace {

ModelSpec cnn(CnnArch arch, int64_t image = 224) {
  ModelSpec m;
  m.kind = ModelKind::Cnn;
  m.name = to_string(arch);
  m.arch = arch;
  m.image_size = image;
  return m;
}

OpGraph build(const ModelSpec& m, int64_t batch = 1) {
  return build_op_graph(m, training(0, Precision::Fp32), batch);
}

double gemm_macs_per_sample(const OpGraph& g) {
  double macs = 0;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::Conv2d || op.kind == OpKind::Matmul) macs += op.fwd_flops / 2;
  return macs / static_cast<double>(g.batch);
}

}  // namespace

TEST_CASE("model: CNN parameter counts match torchvision") {
  CHECK(build(cnn(CnnArch::AlexNet)).parameter_count() == 61'100'840);
  CHECK(build(cnn(CnnArch::Vgg19)).parameter_count() == 143'667'240);
  CHECK(build(cnn(CnnArch::ResNet50)).parameter_count() == 25'557'032);
  // torchvision inception_v3 has 27,161,264 with the auxiliary head; the head is
  // 768*128 + 2*128 (conv0 + BN) + 128*768*25 + 2*768 (conv1 + BN) + 768*1000 + 1000 (fc)
  // = 3,326,696, leaving 23,834,568 without it.
  ModelSpec inception = cnn(CnnArch::InceptionV3, 299);
  CHECK(build(inception).parameter_count() == 23'834'568);
  inception.aux_logits = true;
  const OpGraph with_aux = build(inception);
  CHECK(with_aux.parameter_count() == 27'161'264);
  CHECK(find_module(with_aux, "aux_logits") >= 0);
  CHECK(check_graph(with_aux) == "");
}

TEST_CASE("model: CNN multiply-accumulates match torchvision's tables") {
  CHECK(gemm_macs_per_sample(build(cnn(CnnArch::AlexNet), 2)) == proteus::test::approx(0.71e9).epsilon(0.01));
  CHECK(gemm_macs_per_sample(build(cnn(CnnArch::Vgg19), 2)) == proteus::test::approx(19.63e9).epsilon(0.01));
  CHECK(gemm_macs_per_sample(build(cnn(CnnArch::ResNet50), 2)) ==
        proteus::test::approx(4.09e9).epsilon(0.01));
  CHECK(gemm_macs_per_sample(build(cnn(CnnArch::InceptionV3, 299), 2)) ==
        proteus::test::approx(5.71e9).epsilon(0.01));
}

TEST_CASE("model: every CNN is a valid DAG") {
  for (CnnArch arch : {CnnArch::AlexNet, CnnArch::Vgg19, CnnArch::ResNet50, CnnArch::InceptionV3}) {
    const OpGraph g = build(cnn(arch, arch == CnnArch::InceptionV3 ? 299 : 224), 4);
    CHECK(check_graph(g) == "");
    CHECK(g.samples_per_batch_unit == 1);
  }
}

TEST_CASE("model: ResNet-50 module tree, blocks and residual connections") {
  const OpGraph g = build(cnn(CnnArch::ResNet50), 2);
  CHECK(g.num_layers == 17);  // stem + 3 + 4 + 6 + 3 bottlenecks
  std::vector<std::string> top;
  for (int c : g.modules[0].children) top.push_back(g.modules[c].path);
  CHECK(top == std::vector<std::string>{"features", "classifier"});
  CHECK(g.modules[find_module(g, "features.stem")].layer == 0);
  CHECK(g.modules[find_module(g, "features.layer1.0")].layer == 1);
  CHECK(g.modules[find_module(g, "features.layer4.2")].layer == 16);
  CHECK(g.modules[find_module(g, "features.layer2")].kind == "stage");
  CHECK(g.modules[find_module(g, "classifier")].kind == "classifier");

  // An identity block adds its input; a projection block adds the downsample branch.
  const Op* add1 = find_op(g, "features.layer1.1", "residual");
  const Op* conv1 = find_op(g, "features.layer1.1", "conv1");
  REQUIRE((add1 && conv1));
  CHECK(add1->inputs[1].tensor == conv1->inputs[0].tensor);
  const Op* add0 = find_op(g, "features.layer2.0", "residual");
  const Op* down = find_op(g, "features.layer2.0", "downsample_bn");
  REQUIRE((add0 && down));
  CHECK(add0->inputs[1].tensor == down->output.tensor);

  const Op* conv = find_op(g, "features.layer2.0", "conv2");  // 3x3/2, 128 -> 128, 56 -> 28
  REQUIRE(conv != nullptr);
  CHECK(dim_names(*conv) == "batch,cout,h,w,cin,kh,kw");
  CHECK(use_names(*conv, conv->inputs[0]) == "batch,cin,h,w");
  CHECK(use_names(*conv, conv->weights[0]) == "cout,cin,kh,kw");
  CHECK(use_names(*conv, conv->output) == "batch,cout,h,w");
  CHECK(g.tensors[conv->output.tensor].shape == std::vector<int64_t>{2, 128, 28, 28});
  CHECK(conv->fwd_flops == 2.0 * 2 * 128 * 28 * 28 * 128 * 3 * 3);
  CHECK(conv->gemm_m_dims == std::vector<int>{0, 2, 3});
  CHECK(conv->gemm_n_dims == std::vector<int>{1});
  CHECK(conv->gemm_k_dims == std::vector<int>{4, 5, 6});

  const Op* fc = find_op(g, "classifier", "fc");
  REQUIRE(fc != nullptr);
  CHECK(dim_names(*fc) == "batch,out,in");
  CHECK(g.tensors[fc->inputs[0].tensor].shape == std::vector<int64_t>{2, 2048});
}

TEST_CASE("model: ResNet-50 stem saves what PyTorch keeps for its backward") {
  // fp32, per sample: conv1 input image 3*224*224*4; BatchNorm input (conv1 output)
  // 64*112*112*4; in-place ReLU output 64*112*112*4, also the max pool's input (stored once);
  // max-pool argmax indices 64*56*56*8 (int64).
  const OpGraph g = build(cnn(CnnArch::ResNet50), 1);
  CHECK(saved_bytes_of_layer(g, 0) == 3.0 * 224 * 224 * 4 + 2.0 * 64 * 112 * 112 * 4 + 64.0 * 56 * 56 * 8);
}

TEST_CASE("model: Inception-v3 blocks concatenate parallel branches of the block input") {
  const OpGraph g = build(cnn(CnnArch::InceptionV3, 299), 1);
  CHECK(g.num_layers == 16);
  const Op* concat = find_op(g, "features.Mixed_5b", "concat");
  REQUIRE(concat != nullptr);
  CHECK(concat->inputs.size() == 4);
  CHECK(g.tensors[concat->output.tensor].shape == std::vector<int64_t>{1, 256, 35, 35});
  // Three branches start from the block input (the previous block's concatenation).
  const int block_input = find_op(g, "features.Conv2d_4a_3x3", "maxpool2")->output.tensor;
  int readers = 0;
  for (int o : g.modules[find_module(g, "features.Mixed_5b")].ops)
    for (const TensorUse& u : g.ops[o].inputs) readers += u.tensor == block_input;
  CHECK(readers == 4);  // branch1x1, branch5x5_1, branch3x3dbl_1, branch_pool_avg
  CHECK(g.tensors[find_op(g, "features.Mixed_7c", "concat")->output.tensor].shape ==
        std::vector<int64_t>{1, 2048, 8, 8});
}

TEST_CASE("model: CNN classifiers use in/out dims; AlexNet and VGG-19 blocks") {
  const OpGraph a = build(cnn(CnnArch::AlexNet), 1);
  CHECK(a.num_layers == 5);
  CHECK(find_module(a, "features.conv5") >= 0);
  std::vector<std::string> cls;
  for (int o : a.modules[find_module(a, "classifier")].ops) cls.push_back(a.ops[o].name);
  CHECK(cls ==
        std::vector<std::string>{"dropout1", "fc1", "relu1", "dropout2", "fc2", "relu2", "fc3", "loss"});
  const Op* fc1 = find_op(a, "classifier", "fc1");
  CHECK(fc1->dims[fc1->find_dim("in")].size == 9216);
  CHECK(fc1->dims[fc1->find_dim("out")].size == 4096);
  CHECK(use_names(*fc1, fc1->weights[0]) == "out,in");
  const Op* flat = find_op(a, "features.conv5", "avgpool");
  REQUIRE(flat != nullptr);
  CHECK(use_names(*flat, flat->output) == "batch,cout");
  CHECK(a.tensors[flat->output.tensor].shape == std::vector<int64_t>{1, 9216});

  const OpGraph v = build(cnn(CnnArch::Vgg19), 1);
  CHECK(v.num_layers == 16);
  CHECK(find_module(v, "features.conv5_4") >= 0);
  CHECK(find_op(v, "features.conv5_4", "avgpool") != nullptr);
}

TEST_CASE("model: an image too small for the network is rejected") {
  ModelSpec m = cnn(CnnArch::InceptionV3, 224);
  m.aux_logits = true;  // the auxiliary 5x5 conv needs a 299-pixel input
  try {
    build(m);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.path == "model.image_size");
  }
  CHECK_THROWS_AS(build(cnn(CnnArch::Vgg19, 16)), Error);
}
