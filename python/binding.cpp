// nanobind module `fusedmoe._fusedmoe`: the C++ API for Python. It holds no MoE logic of its own:
// the descriptor types are bound field by field, and the tensor entry points (forward,
// reference_forward, pack_weights, ...) take any DLPack array (torch tensors, numpy arrays, ...),
// check each one against the problem (name, dtype, shape, strides, device) and pass its pointer on.
// Everything the C++ validate() checks (required tensors, alignment, formats) is reported from
// there. Errors raise ValueError (bad argument, shape, alignment, workspace, data out of range),
// NotImplementedError (a valid combination this build does not run) or RuntimeError (device, CUDA).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"

namespace nb = nanobind;
namespace fm = fusedmoe;
namespace dl = nb::dlpack;

namespace {

// ---- errors ----
[[noreturn]] void raise(const fm::Status& st) {
  const std::string msg = st.to_string();
  switch (st.code()) {
    case fm::StatusCode::kInvalidArgument:
    case fm::StatusCode::kMisaligned:
    case fm::StatusCode::kWorkspaceTooSmall:
    case fm::StatusCode::kOutOfRange:
      throw nb::value_error(msg.c_str());
    case fm::StatusCode::kUnsupported:
      PyErr_SetString(PyExc_NotImplementedError, msg.c_str());
      throw nb::python_error();
    default:
      throw std::runtime_error(msg);
  }
}
void check(const fm::Status& st) {
  if (!st.ok()) raise(st);
}
[[noreturn]] void bad(const std::string& msg) { throw nb::value_error(msg.c_str()); }

// ---- arrays ----
enum class Where { kCuda, kCpu };
constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3;

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) {
    o << (i ? ", " : "");
    if (s[i] < 0) o << "any"; else o << s[i];
  }
  o << "]";
  return o.str();
}

std::string dtype_str(dl::dtype d) {
  const char* names[] = {"int", "uint", "float", "?", "bfloat", "complex", "bool", "float8_e3m4", "float8_e4m3",
                         "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                         "float8_e5m2fnuz", "float8_e8m0fnu"};
  std::string n = d.code < sizeof(names) / sizeof(names[0]) ? names[d.code] : "code" + std::to_string(d.code);
  if (d.code >= 7 && d.code <= 14) return n;
  return n + std::to_string(d.bits);
}

// The DLPack dtypes accepted for a library dtype. 1-byte formats also take raw uint8 (e.g. a torch
// float8 tensor viewed as uint8: DLPack exports of float8 vary between frameworks); bf16 also takes
// raw uint16 bits (numpy has no bfloat16).
bool dtype_matches(dl::dtype d, fm::DType want) {
  using C = dl::dtype_code;
  auto is = [&](C c, int bits) { return d.code == static_cast<uint8_t>(c) && d.bits == bits && d.lanes == 1; };
  switch (want) {
    case fm::DType::kFloat32: return is(C::Float, 32);
    case fm::DType::kFloat64: return is(C::Float, 64);
    case fm::DType::kBFloat16: return is(C::Bfloat, 16) || is(C::UInt, 16);
    case fm::DType::kFloat16: return is(C::Float, 16);
    case fm::DType::kFloat8E4M3: return is(C::Float8_E4M3FN, 8) || is(C::UInt, 8);
    case fm::DType::kUE8M0: return is(C::Float8_E8M0FNU, 8) || is(C::UInt, 8);
    case fm::DType::kInt32: return is(C::Int, 32);
    case fm::DType::kInt64: return is(C::Int, 64);
    default: return false;
  }
}

const char* want_str(fm::DType t) {
  switch (t) {
    case fm::DType::kBFloat16: return "bfloat16 (or uint16 bf16 bits)";
    case fm::DType::kFloat8E4M3: return "float8_e4m3fn (or uint8 e4m3 bytes)";
    case fm::DType::kUE8M0: return "float8_e8m0fnu (or uint8 UE8M0 bytes)";
    default: return fm::to_string(t);
  }
}

[[noreturn]] void not_an_array(const nb::handle& obj, const std::string& name) {
  // torch refuses to export tensors that require grad (nn.Parameter) through DLPack
  if (nb::hasattr(obj, "requires_grad") && nb::cast<bool>(obj.attr("requires_grad")))
    throw nb::type_error((name + ": a tensor that requires grad cannot be passed through DLPack; pass "
                                 "tensor.detach() (no copy)").c_str());
  throw nb::type_error((name + ": expected an array with DLPack support (torch tensor, numpy array, ...), got " +
                        std::string(nb::str(nb::handle(obj.type())).c_str()))
                           .c_str());
}

// The arrays taken from Python for one call: kept until the C++ call has returned (a DLPack
// capsule passed directly would otherwise be released with its local view).
struct Keep {
  std::vector<nb::ndarray<nb::ro>> ro;
  std::vector<nb::ndarray<>> rw;
};

// Checks `obj` as the tensor `name`: device, dtype, shape (-1 = any extent), C-contiguous except
// that with `row_stride` the outer stride of a 2-D array may exceed its row (returned there, in
// elements); `writable` for outputs. Returns the data pointer; `keep` holds the array.
void* check_array(const nb::handle& obj, const std::string& name, Where where, int device, fm::DType dtype,
                  std::vector<int64_t> shape, Keep* keep, bool writable = false, int64_t* row_stride = nullptr,
                  std::vector<int64_t>* actual = nullptr) {
  nb::ndarray<nb::ro> a;
  if (writable) {
    nb::ndarray<> w;
    if (!nb::try_cast(obj, w, false)) {
      if (nb::try_cast(obj, a, false)) bad(name + ": an output, must be writable");
      not_an_array(obj, name);
    }
    keep->rw.push_back(w);
    a = nb::ndarray<nb::ro>(w);
  } else if (!nb::try_cast(obj, a, false)) {
    not_an_array(obj, name);
  }
  keep->ro.push_back(a);
  if (where == Where::kCuda) {
    if (a.device_type() != kDLCUDA)
      bad(name + ": must be on a CUDA device (got a host array); forward() runs on the GPU");
    if (a.device_id() != device)
      bad(name + ": on cuda:" + std::to_string(a.device_id()) + " but the current device is cuda:" +
          std::to_string(device) + " (torch.cuda.set_device / with torch.cuda.device(...))");
  } else if (a.device_type() != kDLCPU && a.device_type() != kDLCUDAHost) {
    bad(name + ": must be a host (CPU) array for the CPU reference");
  }
  if (!dtype_matches(a.dtype(), dtype)) bad(name + ": dtype " + dtype_str(a.dtype()) + ", expected " + want_str(dtype));
  std::vector<int64_t> got(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) got[i] = static_cast<int64_t>(a.shape(i));
  if (shape.size() == 1 && shape[0] == 1 && got.empty()) got = {1};  // a 0-d scalar as [1]
  if (actual) *actual = got;
  bool ok = got.size() == shape.size();
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] < 0 || shape[i] == got[i];
  if (!ok) bad(name + ": shape " + shape_str(got) + ", expected " + shape_str(shape) + " for this problem");
  // Strides (elements): C order, size-1 dimensions free; 2-D row-strided arrays where allowed. An
  // empty array (an extent 0: zero tokens) has no layout to check (numpy gives it strides 0).
  bool empty = false;
  for (int64_t g : got) empty |= g == 0;
  int64_t expect = 1;
  for (int i = static_cast<int>(got.size()) - 1; i >= 0 && !empty; --i) {
    if (got[i] != 1 && a.stride(i) != expect) {
      const bool outer_ok = row_stride && got.size() == 2 && i == 0 && a.stride(0) >= got[1];
      if (!outer_ok) bad(name + ": must be contiguous (row-major)" + std::string(row_stride ? ", rows may be strided" : "") +
                         "; call .contiguous() / numpy.ascontiguousarray first");
    }
    expect *= got[i];
  }
  if (row_stride) *row_stride = !empty && got.size() == 2 && got[0] > 1 ? a.stride(0) : 0;
  return const_cast<void*>(a.data());
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The shape of a weight-scale tensor (fusedmoe/quant.h) for a [G, rows, cols] matrix stack.
std::vector<int64_t> scale_shape(const fm::WeightQuant& wq, int64_t g, int64_t rows, int64_t cols) {
  switch (wq.granularity) {
    case fm::ScaleGranularity::kPerTensor: return {g};
    case fm::ScaleGranularity::kPerChannel: return {g, rows};
    case fm::ScaleGranularity::kBlock: return {g, cdiv(rows, wq.block_n), cdiv(cols, wq.block_k)};
    case fm::ScaleGranularity::kGroup: return {g, rows, cdiv(cols, wq.block_k)};
    default: return {};
  }
}

fm::DType weight_dtype(const fm::WeightQuant& wq) {
  switch (wq.format) {
    case fm::WeightFormat::kBF16: return fm::DType::kBFloat16;
    case fm::WeightFormat::kFP16: return fm::DType::kFloat16;
    case fm::WeightFormat::kFP8E4M3: return fm::DType::kFloat8E4M3;
    default: return fm::DType::kPackedInt4;  // no kernel: validate() reports it
  }
}

// A 1-D byte buffer on the device (workspace, packed weights): pointer and size in bytes.
std::pair<void*, size_t> device_bytes(const nb::handle& obj, const char* name, int device, Keep* keep) {
  nb::ndarray<> a;
  if (!nb::try_cast(obj, a, false)) not_an_array(obj, name);
  keep->rw.push_back(a);
  if (a.device_type() != kDLCUDA || a.device_id() != device)
    bad(std::string(name) + ": must be on the current CUDA device (cuda:" + std::to_string(device) + ")");
  int64_t expect = 1;
  for (int i = static_cast<int>(a.ndim()) - 1; i >= 0; --i) {
    if (a.shape(i) != 1 && a.stride(i) != expect) bad(std::string(name) + ": must be contiguous");
    expect *= static_cast<int64_t>(a.shape(i));
  }
  return {a.data(), a.nbytes()};
}

// Names accepted as tensors by forward() / reference_forward(): MoeTensors' fields.
const char* const kTensorNames[] = {"x", "out", "router_logits", "correction_bias", "token_ids", "hash_table",
                                    "topk_ids", "topk_weights", "expert_map", "w1", "w1_scale", "b1", "w2",
                                    "w2_scale", "b2", "act_scale", "act2_scale", "w1_packed", "w2_packed",
                                    "w1_gate_up_blocks", "num_tokens_device", "out_topk_ids", "out_topk_weights"};

// Fills the tensors of one call from keyword arrays for problem `*pp` (num_tokens set from x here;
// for the CPU reference a max_tokens of 0 means x's count). `keep` holds the arrays. The problem is
// validated first, so that every extent below is in range.
fm::MoeTensors collect(fm::MoeProblem* pp, const nb::kwargs& kw, Where where, int device, Keep* keep) {
  fm::MoeProblem& p = *pp;
  for (auto [key, v] : kw) {
    const std::string name = nb::cast<std::string>(key);
    bool known = false;
    for (const char* n : kTensorNames) known |= name == n;
    if (!known) {
      std::string list;
      for (const char* n : kTensorNames) list += std::string(list.empty() ? "" : ", ") + n;
      throw nb::type_error(("unknown tensor '" + name + "' (MoeTensors fields: " + list + ")").c_str());
    }
    if (where == Where::kCpu && (name == "out" || name == "w1_packed" || name == "w2_packed" ||
                                 name == "w1_gate_up_blocks" || name == "num_tokens_device" ||
                                 name == "out_topk_ids" || name == "out_topk_weights"))
      throw nb::type_error((name + ": not an input of the CPU reference (it returns out, topk_ids, topk_weights)").c_str());
  }
  auto get = [&](const char* name) -> nb::handle {
    PyObject* o = PyDict_GetItemString(kw.ptr(), name);  // borrowed; kw outlives the call
    return o && o != Py_None ? nb::handle(o) : nb::handle();
  };
  const nb::handle x = get("x");
  if (!x.is_valid()) bad("x: required (the [tokens, hidden] input)");
  if (where == Where::kCuda && p.max_tokens <= 0)
    bad("problem.max_tokens: must be set (> 0): it sizes the workspace (workspace_size) and bounds x.shape[0]");
  int64_t tokens = 0;  // x.shape[0]; an x without one fails check_array's shape check below
  try {
    tokens = nb::cast<int64_t>(x.attr("shape")[0]);
  } catch (const std::exception&) {
    PyErr_Clear();
  }
  if (p.max_tokens <= 0) p.max_tokens = std::max<int64_t>(tokens, 1);
  p.num_tokens = tokens;
  check(fm::validate(p));

  fm::MoeTensors t;
  auto arr = [&](const nb::handle& h, const char* name, fm::DType dt, std::vector<int64_t> shape, bool writable = false,
                 int64_t* row_stride = nullptr, std::vector<int64_t>* actual = nullptr) {
    return check_array(h, name, where, device, dt, std::move(shape), keep, writable, row_stride, actual);
  };
  const int64_t T = tokens, E = p.num_experts, k = p.top_k(), K = p.hidden, N = p.intermediate;
  const int64_t G = p.weight_experts(), R1 = p.gemm1_rows();
  t.x = arr(x, "x", p.act_dtype, {T, K}, false, &t.x_row_stride);
  const fm::DType wdt = weight_dtype(p.quant.weight);
  const fm::DType sdt = p.quant.weight.scale_format == fm::ScaleFormat::kUE8M0 ? fm::DType::kUE8M0 : fm::DType::kFloat32;
  nb::handle h;
  if ((h = get("out"))) t.out = arr(h, "out", p.act_dtype, {T, K}, true, &t.out_row_stride);
  if ((h = get("router_logits"))) t.router_logits = arr(h, "router_logits", p.router.logits_dtype, {T, E});
  if ((h = get("correction_bias"))) t.correction_bias = static_cast<const float*>(arr(h, "correction_bias", fm::DType::kFloat32, {E}));
  if ((h = get("token_ids"))) t.token_ids = static_cast<const int64_t*>(arr(h, "token_ids", fm::DType::kInt64, {T}));
  if ((h = get("hash_table"))) {
    std::vector<int64_t> s;
    t.hash_table = static_cast<const int32_t*>(arr(h, "hash_table", fm::DType::kInt32, {-1, k}, false, nullptr, &s));
    t.hash_vocab = s[0];
  }
  if ((h = get("topk_ids"))) t.topk_ids = static_cast<const int32_t*>(arr(h, "topk_ids", fm::DType::kInt32, {T, k}));
  if ((h = get("topk_weights"))) t.topk_weights = static_cast<const float*>(arr(h, "topk_weights", fm::DType::kFloat32, {T, k}));
  if ((h = get("expert_map"))) t.expert_map = static_cast<const int32_t*>(arr(h, "expert_map", fm::DType::kInt32, {E}));
  if ((h = get("w1"))) t.w1 = arr(h, "w1", wdt, {G, R1, K});
  if ((h = get("w2"))) t.w2 = arr(h, "w2", wdt, {G, K, N});
  if ((h = get("w1_scale"))) t.w1_scale = arr(h, "w1_scale", sdt, scale_shape(p.quant.weight, G, R1, K));
  if ((h = get("w2_scale"))) t.w2_scale = arr(h, "w2_scale", sdt, scale_shape(p.quant.weight, G, K, N));
  if ((h = get("b1"))) t.b1 = static_cast<const float*>(arr(h, "b1", fm::DType::kFloat32, {G, R1}));
  if ((h = get("b2"))) t.b2 = static_cast<const float*>(arr(h, "b2", fm::DType::kFloat32, {G, K}));
  if ((h = get("act_scale"))) t.act_scale = static_cast<const float*>(arr(h, "act_scale", fm::DType::kFloat32, {1}));
  if ((h = get("act2_scale"))) t.act2_scale = static_cast<const float*>(arr(h, "act2_scale", fm::DType::kFloat32, {1}));
  for (int gemm : {1, 2}) {  // device only (the CPU reference rejects them above)
    const char* name = gemm == 1 ? "w1_packed" : "w2_packed";
    if (!(h = get(name))) continue;
    size_t need = 0;
    check(fm::packed_weights_size(p, gemm, &need));
    const auto [ptr, bytes] = device_bytes(h, name, device, keep);
    if (bytes < need)
      bad(std::string(name) + ": " + std::to_string(bytes) + " bytes, packed_weights_size() gives " + std::to_string(need));
    (gemm == 1 ? t.w1_packed : t.w2_packed) = ptr;
  }
  if ((h = get("w1_gate_up_blocks"))) t.w1_gate_up_blocks = arr(h, "w1_gate_up_blocks", wdt, {G, R1, K});
  if ((h = get("num_tokens_device")))
    t.num_tokens_device = static_cast<const int32_t*>(arr(h, "num_tokens_device", fm::DType::kInt32, {1}));
  if ((h = get("out_topk_ids"))) t.out_topk_ids = static_cast<int32_t*>(arr(h, "out_topk_ids", fm::DType::kInt32, {T, k}, true));
  if ((h = get("out_topk_weights")))
    t.out_topk_weights = static_cast<float*>(arr(h, "out_topk_weights", fm::DType::kFloat32, {T, k}, true));
  return t;
}

int current_cuda_device() {
  int dev = 0;
  check(fm::current_device(&dev));
  return dev;
}

fm::Stream as_stream(uintptr_t s) { return reinterpret_cast<fm::Stream>(s); }

template <class T>
nb::object to_numpy(std::vector<T> v, std::initializer_list<size_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T>(heap->data(), shape, owner));
}

// dispatch()'s result for Python: the C++ result (device pointers into the workspace), the problem
// of the call, and the objects whose memory the views point into (the workspace; x where the
// activations are x itself).
struct PyDispatch {
  fm::MoeProblem problem;
  fm::DispatchResult r;
  nb::object workspace, inputs;  // the workspace; the call's tensors (x, num_tokens_device, ...)
  nb::object x;                   // x, when the activations are x itself (token order, no copy)
  int device = 0;

  nb::object view(const void* ptr, std::vector<size_t> shape, dl::dtype dt, const nb::object& owner) const {
    if (!ptr) return nb::none();
    return nb::cast(nb::ndarray<>(const_cast<void*>(ptr), shape.size(), shape.data(), owner, nullptr, dt, kDLCUDA, device));
  }
  nb::object i32(const void* ptr, std::vector<size_t> shape) const {
    return view(ptr, std::move(shape), nb::dtype<int32_t>(), workspace);
  }
};

template <class E>
void values(nb::enum_<E>& e, std::initializer_list<std::pair<const char*, E>> v) {
  for (const auto& [n, x] : v) e.value(n, x);
}

}  // namespace

NB_MODULE(_fusedmoe, m) {
  m.doc() = "fusedmoe: fused MoE kernels for Hopper (thin binding of the C++ API)";

  // ---- enums ----
  {
    nb::enum_<fm::DType> e(m, "DType");
    values<fm::DType>(e, {{"Float32", fm::DType::kFloat32}, {"Float64", fm::DType::kFloat64}, {"BFloat16", fm::DType::kBFloat16},
                          {"Float16", fm::DType::kFloat16}, {"Float8E4M3", fm::DType::kFloat8E4M3}, {"UE8M0", fm::DType::kUE8M0},
                          {"Int32", fm::DType::kInt32}, {"Int64", fm::DType::kInt64}, {"PackedInt4", fm::DType::kPackedInt4},
                          {"PackedFP4", fm::DType::kPackedFP4}});
  }
  {
    nb::enum_<fm::RouterKind> e(m, "RouterKind");
    values<fm::RouterKind>(e, {{"SoftmaxTopK", fm::RouterKind::kSoftmaxTopK}, {"BiasedTopK", fm::RouterKind::kBiasedTopK},
                               {"TopKSoftmax", fm::RouterKind::kTopKSoftmax}, {"SigmoidTop1", fm::RouterKind::kSigmoidTop1},
                               {"Hash", fm::RouterKind::kHash}, {"Precomputed", fm::RouterKind::kPrecomputed}});
  }
  {
    nb::enum_<fm::ScoreFunction> e(m, "ScoreFunction");
    values<fm::ScoreFunction>(e, {{"Softmax", fm::ScoreFunction::kSoftmax}, {"Sigmoid", fm::ScoreFunction::kSigmoid},
                                  {"SqrtSoftplus", fm::ScoreFunction::kSqrtSoftplus}});
  }
  {
    nb::enum_<fm::WeightFormat> e(m, "WeightFormat");
    values<fm::WeightFormat>(e, {{"BF16", fm::WeightFormat::kBF16}, {"FP16", fm::WeightFormat::kFP16},
                                 {"FP8E4M3", fm::WeightFormat::kFP8E4M3}, {"MXFP4", fm::WeightFormat::kMXFP4},
                                 {"Int4", fm::WeightFormat::kInt4}});
  }
  {
    nb::enum_<fm::ScaleGranularity> e(m, "ScaleGranularity");
    values<fm::ScaleGranularity>(e, {{"None", fm::ScaleGranularity::kNone}, {"PerTensor", fm::ScaleGranularity::kPerTensor},
                                     {"PerChannel", fm::ScaleGranularity::kPerChannel}, {"Block", fm::ScaleGranularity::kBlock},
                                     {"Group", fm::ScaleGranularity::kGroup}});
  }
  {
    nb::enum_<fm::ScaleFormat> e(m, "ScaleFormat");
    values<fm::ScaleFormat>(e, {{"Float32", fm::ScaleFormat::kFloat32}, {"UE8M0", fm::ScaleFormat::kUE8M0}});
  }
  {
    nb::enum_<fm::ActQuant> e(m, "ActQuant");
    values<fm::ActQuant>(e, {{"None", fm::ActQuant::kNone}, {"PerTensorStatic", fm::ActQuant::kPerTensorStatic},
                             {"PerTensorDynamic", fm::ActQuant::kPerTensorDynamic}, {"PerToken", fm::ActQuant::kPerToken},
                             {"Group128", fm::ActQuant::kGroup128}});
  }
  {
    nb::enum_<fm::ActivationKind> e(m, "ActivationKind");
    values<fm::ActivationKind>(e, {{"SiluGated", fm::ActivationKind::kSiluGated}, {"GeluGated", fm::ActivationKind::kGeluGated},
                                   {"GeluTanhGated", fm::ActivationKind::kGeluTanhGated},
                                   {"ClampedSwiglu", fm::ActivationKind::kClampedSwiglu},
                                   {"SwigluOai", fm::ActivationKind::kSwigluOai}, {"SquaredRelu", fm::ActivationKind::kSquaredRelu}});
  }
  {
    nb::enum_<fm::Backend> e(m, "Backend");
    values<fm::Backend>(e, {{"Auto", fm::Backend::kAuto}, {"Grouped", fm::Backend::kGrouped}, {"Fused", fm::Backend::kFused},
                            {"CutlassGrouped", fm::Backend::kCutlassGrouped}});
  }
  {
    nb::enum_<fm::TileFamily> e(m, "TileFamily");
    values<fm::TileFamily>(e, {{"Auto", fm::TileFamily::kAuto}, {"Normal", fm::TileFamily::kNormal}, {"SwapAB", fm::TileFamily::kSwapAB}});
  }
  {
    nb::enum_<fm::Toggle> e(m, "Toggle");
    values<fm::Toggle>(e, {{"Auto", fm::Toggle::kAuto}, {"Off", fm::Toggle::kOff}, {"On", fm::Toggle::kOn}});
  }
  {
    nb::enum_<fm::Stage> e(m, "Stage");
    values<fm::Stage>(e, {{"All", fm::Stage::kAll}, {"Dispatch", fm::Stage::kDispatch}, {"Gemm1", fm::Stage::kGemm1},
                          {"Gemm2", fm::Stage::kGemm2}});
  }

  // ---- descriptors ----
  nb::class_<fm::RouterConfig>(m, "RouterConfig", "How tokens choose experts (fusedmoe/router.h)")
      .def(nb::init<>())
      .def_rw("kind", &fm::RouterConfig::kind)
      .def_rw("score", &fm::RouterConfig::score)
      .def_rw("top_k", &fm::RouterConfig::top_k)
      .def_rw("renormalize", &fm::RouterConfig::renormalize)
      .def_rw("n_group", &fm::RouterConfig::n_group)
      .def_rw("topk_group", &fm::RouterConfig::topk_group)
      .def_rw("routed_scaling", &fm::RouterConfig::routed_scaling)
      .def_rw("use_correction_bias", &fm::RouterConfig::use_correction_bias)
      .def_rw("weight_on_input", &fm::RouterConfig::weight_on_input)
      .def_rw("logits_dtype", &fm::RouterConfig::logits_dtype)
      .def_static("softmax_topk", &fm::RouterConfig::softmax_topk, nb::arg("k"), nb::arg("renormalize"))
      .def_static("deepseek_v3", &fm::RouterConfig::deepseek_v3, nb::arg("k") = 8, nb::arg("n_group") = 8,
                  nb::arg("topk_group") = 4, nb::arg("scaling") = 2.5f)
      .def_static("deepseek_v4", &fm::RouterConfig::deepseek_v4, nb::arg("k") = 6, nb::arg("scaling") = 1.5f)
      .def_static("sigmoid_bias", &fm::RouterConfig::sigmoid_bias, nb::arg("k"), nb::arg("scaling"))
      .def_static("gpt_oss", &fm::RouterConfig::gpt_oss, nb::arg("k") = 4)
      .def_static("llama4", &fm::RouterConfig::llama4)
      .def_static("hash", &fm::RouterConfig::hash, nb::arg("k"), nb::arg("score"), nb::arg("scaling"))
      .def_static("precomputed", &fm::RouterConfig::precomputed, nb::arg("k"));

  nb::class_<fm::WeightQuant>(m, "WeightQuant", "Weight format and scales (fusedmoe/quant.h)")
      .def(nb::init<>())
      .def_rw("format", &fm::WeightQuant::format)
      .def_rw("granularity", &fm::WeightQuant::granularity)
      .def_rw("scale_format", &fm::WeightQuant::scale_format)
      .def_rw("block_n", &fm::WeightQuant::block_n)
      .def_rw("block_k", &fm::WeightQuant::block_k);

  nb::class_<fm::QuantScheme>(m, "QuantScheme", "Weight format and activation quantisation (fusedmoe/quant.h)")
      .def(nb::init<>())
      .def_rw("weight", &fm::QuantScheme::weight)
      .def_rw("act", &fm::QuantScheme::act)
      .def_rw("act_scale_format", &fm::QuantScheme::act_scale_format)
      .def_static("bf16", &fm::QuantScheme::bf16)
      .def_static("fp16", &fm::QuantScheme::fp16)
      .def_static("fp8_per_tensor", &fm::QuantScheme::fp8_per_tensor, nb::arg("dynamic_act_scale"))
      .def_static("fp8_per_channel", &fm::QuantScheme::fp8_per_channel)
      .def_static("fp8_block128", &fm::QuantScheme::fp8_block128, nb::arg("scales") = fm::ScaleFormat::kFloat32);

  nb::class_<fm::Activation>(m, "Activation", "The expert activation (fusedmoe/activation.h)")
      .def(nb::init<>())
      .def_rw("kind", &fm::Activation::kind)
      .def_rw("limit", &fm::Activation::limit)
      .def_rw("alpha", &fm::Activation::alpha)
      .def_rw("interleaved", &fm::Activation::interleaved)
      .def("gated", &fm::Activation::gated)
      .def_static("silu", &fm::Activation::silu)
      .def_static("gelu", &fm::Activation::gelu)
      .def_static("clamped_swiglu", &fm::Activation::clamped_swiglu, nb::arg("limit"))
      .def_static("swiglu_oai", &fm::Activation::swiglu_oai, nb::arg("alpha") = 1.702f, nb::arg("limit") = 7.f,
                  nb::arg("interleaved") = true)
      .def_static("squared_relu", &fm::Activation::squared_relu);

  nb::class_<fm::MoeProblem>(m, "Problem", "One MoE layer call (fusedmoe/problem.h: MoeProblem)")
      .def(nb::init<>())
      .def_rw("num_tokens", &fm::MoeProblem::num_tokens)
      .def_rw("max_tokens", &fm::MoeProblem::max_tokens)
      .def_rw("num_experts", &fm::MoeProblem::num_experts)
      .def_rw("num_local_experts", &fm::MoeProblem::num_local_experts)
      .def_rw("expected_local_slots", &fm::MoeProblem::expected_local_slots)
      .def_rw("hidden", &fm::MoeProblem::hidden)
      .def_rw("intermediate", &fm::MoeProblem::intermediate)
      .def_rw("act_dtype", &fm::MoeProblem::act_dtype)
      .def_rw("quant", &fm::MoeProblem::quant)
      .def_rw("activation", &fm::MoeProblem::activation)
      .def_rw("router", &fm::MoeProblem::router)
      .def_rw("num_shared_experts", &fm::MoeProblem::num_shared_experts)
      .def_rw("shared_expert_scale", &fm::MoeProblem::shared_expert_scale)
      .def_rw("has_expert_bias", &fm::MoeProblem::has_expert_bias)
      .def("top_k", &fm::MoeProblem::top_k)
      .def("weight_experts", &fm::MoeProblem::weight_experts)
      .def("gemm1_rows", &fm::MoeProblem::gemm1_rows)
      .def("flops", &fm::MoeProblem::flops)
      .def("__copy__", [](const fm::MoeProblem& p) { return p; })
      .def("__repr__", [](const fm::MoeProblem& p) {
        std::ostringstream o;
        o << p;
        return "<fusedmoe.Problem " + o.str() + ">";
      });

  nb::class_<fm::ForwardOptions>(m, "ForwardOptions", "Overrides of the oracle's choices (fusedmoe/moe.h)")
      .def(nb::init<>())
      .def_rw("backend", &fm::ForwardOptions::backend)
      .def_rw("tiles", &fm::ForwardOptions::tiles)
      .def_rw("tokens_tile", &fm::ForwardOptions::tokens_tile)
      .def_rw("gemm2_tokens_tile", &fm::ForwardOptions::gemm2_tokens_tile)
      .def_rw("overlap_launches", &fm::ForwardOptions::overlap_launches)
      .def_rw("staged_epilogue", &fm::ForwardOptions::staged_epilogue)
      .def_rw("gather_rows", &fm::ForwardOptions::gather_rows)
      .def_rw("weights_evict_first", &fm::ForwardOptions::weights_evict_first)
      .def_rw("fuse_front", &fm::ForwardOptions::fuse_front)
      .def_rw("split_k", &fm::ForwardOptions::split_k)
      .def_rw("balanced_gemm2", &fm::ForwardOptions::balanced_gemm2)
      .def_rw("balanced_gemm1", &fm::ForwardOptions::balanced_gemm1)
      .def_rw("dense_swapab", &fm::ForwardOptions::dense_swapab)
      .def_rw("gemm1_dense_swapab", &fm::ForwardOptions::gemm1_dense_swapab)
      .def_rw("fp8_pair_swapab", &fm::ForwardOptions::fp8_pair_swapab)
      .def_rw("packed_weights", &fm::ForwardOptions::packed_weights)
      .def_rw("fused_h_quant", &fm::ForwardOptions::fused_h_quant)
      .def_rw("gemm2_quantises_h", &fm::ForwardOptions::gemm2_quantises_h)
      .def_rw("k_splits", &fm::ForwardOptions::k_splits)
      .def_rw("gemm1_k_splits", &fm::ForwardOptions::gemm1_k_splits)
      .def_rw("weight_tiles_per_cta", &fm::ForwardOptions::weight_tiles_per_cta)
      .def_rw("gemm1_weight_tiles_per_cta", &fm::ForwardOptions::gemm1_weight_tiles_per_cta)
      .def_rw("early_weight_stages", &fm::ForwardOptions::early_weight_stages)
      .def_rw("gemm2_early_weight_stages", &fm::ForwardOptions::gemm2_early_weight_stages)
      .def_rw("scales_by_token", &fm::ForwardOptions::scales_by_token)
      .def_rw("cutlass_gemm2", &fm::ForwardOptions::cutlass_gemm2)
      .def_rw("pingpong_gemm2", &fm::ForwardOptions::pingpong_gemm2)
      .def_rw("fused_activation", &fm::ForwardOptions::fused_activation)
      .def_rw("stop_after", &fm::ForwardOptions::stop_after);

  // ---- build, device, presets ----
  m.def("version", [] { return fm::build_info().version; });
  m.def("build_info", [] {
    const fm::BuildInfo b = fm::build_info();
    nb::dict d;
    d["version"] = b.version;
    d["with_cuda"] = b.with_cuda;
    d["with_nccl"] = b.with_nccl;
    d["cuda_archs"] = b.cuda_archs;
    d["cutlass_version"] = b.cutlass_version;
    d["nccl_version"] = b.nccl_version;
    d["kernels"] = b.kernels;
    return d;
  });
  m.def("presets", [] {
    std::vector<std::string> names;
    for (const auto& p : fm::presets()) names.push_back(p.name);
    return names;
  });
  m.def("preset", [](const std::string& name) {
        const fm::Preset* p = fm::find_preset(name);
        if (!p) throw nb::value_error(("unknown preset '" + name + "' (fusedmoe.presets() lists them)").c_str());
        return p->problem;
      },
      nb::arg("name"), "The problem of a built-in model shape (shared/model-shapes.md); set max_tokens before sizing the workspace.");
  m.def("device_status", [] {
    int dev = 0;
    fm::Status st = fm::current_device(&dev);
    if (st.ok()) st = fm::check_device_supported(dev);
    return st.to_string();
  });

  // ---- planning ----
  m.def("validate", [](const fm::MoeProblem& p) { check(fm::validate(p)); }, nb::arg("problem"),
        "Raises ValueError / NotImplementedError when the descriptor is invalid or not run by this build.");
  m.def("workspace_size", [](const fm::MoeProblem& p) {
        size_t bytes = 0;
        check(fm::workspace_size(p, &bytes));
        return bytes;
      },
      nb::arg("problem"), "Bytes of workspace for any call with up to problem.max_tokens tokens (allocate once).");
  m.def("packed_weights_size", [](const fm::MoeProblem& p, int gemm) {
        size_t bytes = 0;
        check(fm::packed_weights_size(p, gemm, &bytes));
        return bytes;
      },
      nb::arg("problem"), nb::arg("gemm"));
  m.def("explain", [](const fm::MoeProblem& p, std::optional<fm::ForwardOptions> o) { return fm::explain(p, o.value_or(fm::ForwardOptions{})); },
        nb::arg("problem"), nb::arg("options") = nb::none(), "The plan forward() would run, and why.");
  m.def("explain", [](const std::string& preset, int64_t tokens) {
        const fm::Preset* p = fm::find_preset(preset);
        if (!p) throw nb::value_error(("unknown preset '" + preset + "'").c_str());
        fm::MoeProblem q = p->problem;
        q.num_tokens = q.max_tokens = tokens;
        return fm::explain(q);
      },
      nb::arg("preset"), nb::arg("tokens"));

  // ---- the layer on the GPU ----
  m.def("forward",
        [](const fm::MoeProblem& problem, nb::handle workspace, uintptr_t stream, std::optional<fm::ForwardOptions> options,
           nb::kwargs tensors) {
          const int dev = current_cuda_device();
          fm::MoeProblem p = problem;
          Keep keep;
          const fm::MoeTensors t = collect(&p, tensors, Where::kCuda, dev, &keep);
          if (!t.out) bad("out: required (the [tokens, hidden] output, act_dtype)");
          const auto [ws, ws_bytes] = device_bytes(workspace, "workspace", dev, &keep);
          fm::Status st;
          {
            nb::gil_scoped_release unlocked;
            st = fm::forward(p, t, ws, ws_bytes, as_stream(stream), options.value_or(fm::ForwardOptions{}));
          }
          check(st);
        },
        nb::arg("problem"), nb::arg("workspace"), nb::kw_only(), nb::arg("stream") = 0, nb::arg("options") = nb::none(),
        nb::arg("tensors"),
        "Runs the layer on `stream` (an int: torch.cuda.current_stream().cuda_stream; 0 = the legacy default stream).\n"
        "Tensors by keyword, named as the C++ MoeTensors fields (x, out, router_logits, w1, w2, w1_scale, ...),\n"
        "on the current CUDA device; tokens = x.shape[0] (<= problem.max_tokens). Asynchronous, no allocation,\n"
        "CUDA-graph capturable (the workspace and tensors must outlive the graph).");
  m.def("check_device_errors", [](const fm::MoeProblem& p, nb::handle workspace, uintptr_t stream) {
        Keep keep;
        const auto [ws, bytes] = device_bytes(workspace, "workspace", current_cuda_device(), &keep);
        check(fm::validate(p));
        size_t need = 0;
        check(fm::workspace_size(p, &need));
        if (bytes < need)
          bad("workspace: " + std::to_string(bytes) + " bytes, workspace_size(problem) is " + std::to_string(need) +
              ": not the workspace of this problem (the same max_tokens as forward())");
        fm::Status st;
        {
          nb::gil_scoped_release unlocked;
          st = fm::check_device_errors(p, ws, as_stream(stream));
        }
        check(st);
      },
      nb::arg("problem"), nb::arg("workspace"), nb::arg("stream") = 0,
      "Input errors the device found in the last call on this workspace (ids outside [0, E), a device token\n"
      "count out of range). Synchronises the stream.");
  m.def("pack_weights", [](const fm::MoeProblem& p, int gemm, nb::handle w, nb::handle packed, uintptr_t stream) {
        const int dev = current_cuda_device();
        const fm::WeightQuant& wq = p.quant.weight;
        const std::vector<int64_t> shape = gemm == 1 ? std::vector<int64_t>{p.weight_experts(), p.gemm1_rows(), p.hidden}
                                                     : std::vector<int64_t>{p.weight_experts(), p.hidden, p.intermediate};
        Keep keep;
        check(fm::validate(p));
        const void* wp = check_array(w, gemm == 1 ? "w1" : "w2", Where::kCuda, dev, weight_dtype(wq), shape, &keep);
        size_t need = 0;
        check(fm::packed_weights_size(p, gemm, &need));
        const auto [dst, bytes] = device_bytes(packed, "packed", dev, &keep);
        if (bytes < need) bad("packed: " + std::to_string(bytes) + " bytes, packed_weights_size() asks for " + std::to_string(need));
        check(fm::pack_weights(p, gemm, wp, dst, as_stream(stream)));
      },
      nb::arg("problem"), nb::arg("gemm"), nb::arg("w"), nb::arg("packed"), nb::arg("stream") = 0,
      "Writes w1 (gemm=1) or w2 (gemm=2) pre-tiled for the decode GEMMs into `packed` (packed_weights_size bytes);\n"
      "pass it to forward() as w1_packed / w2_packed beside w1 / w2. Once, at load time.");
  m.def("pack_gate_up_blocks", [](const fm::MoeProblem& p, nb::handle w1, nb::handle out, uintptr_t stream) {
        const int dev = current_cuda_device();
        Keep keep;
        check(fm::validate(p));
        const void* wp = check_array(w1, "w1", Where::kCuda, dev, weight_dtype(p.quant.weight),
                                     {p.weight_experts(), p.gemm1_rows(), p.hidden}, &keep);
        const auto [dst, bytes] = device_bytes(out, "out", dev, &keep);
        const size_t need = static_cast<size_t>(p.weight_experts()) * p.gemm1_rows() * p.hidden *
                            fm::dtype_bytes(weight_dtype(p.quant.weight));
        if (bytes < need) bad("out: " + std::to_string(bytes) + " bytes, w1 has " + std::to_string(need));
        check(fm::pack_gate_up_blocks(p, wp, dst, as_stream(stream)));
      },
      nb::arg("problem"), nb::arg("w1"), nb::arg("out"), nb::arg("stream") = 0,
      "W1's gate and up rows alternating in blocks of 8 (MoeTensors.w1_gate_up_blocks, for the prefill GEMM1 with\n"
      "the activation in its epilogue). Once, at load time.");

  // ---- the float64 CPU reference ----
  m.def("reference_forward",
        [](const fm::MoeProblem& problem, nb::kwargs tensors) {
          fm::MoeProblem p = problem;
          Keep keep;
          const fm::MoeTensors t = collect(&p, tensors, Where::kCpu, 0, &keep);
          fm::ref::LayerResult r;
          fm::Status st;
          {
            nb::gil_scoped_release unlocked;
            st = fm::ref::forward(p, t, &r);
          }
          check(st);
          const size_t T = static_cast<size_t>(p.num_tokens), K = static_cast<size_t>(p.hidden),
                       k = static_cast<size_t>(p.top_k());
          nb::dict d;
          d["out"] = to_numpy(std::move(r.out), {T, K});
          d["topk_ids"] = to_numpy(std::move(r.routing.ids), {T, k});
          d["topk_weights"] = to_numpy(std::move(r.routing.weights), {T, k});
          return d;
        },
        nb::arg("problem"), nb::arg("tensors"),
        "The whole layer in float64 on the CPU, from host arrays named as forward()'s inputs (x, router_logits,\n"
        "w1, w2, ...; bf16 may be given as uint16 bits). Returns {'out': float64 [T, K], 'topk_ids': int32 [T, k],\n"
        "'topk_weights': float32 [T, k]}. What the GPU tests compare forward() with.");

  // ---- DeepSeek-V4 inverse RoPE + FP8 per-head quantisation (fusedmoe/rope_quant.h) ----
  nb::class_<fm::InvRopeQuantProblem>(m, "RopeQuantProblem", "DeepSeek-V4's inverse RoPE + FP8 quantisation (fusedmoe/rope_quant.h)")
      .def(nb::init<>())
      .def_rw("num_tokens", &fm::InvRopeQuantProblem::num_tokens)
      .def_rw("num_groups", &fm::InvRopeQuantProblem::num_groups)
      .def_rw("heads_per_group", &fm::InvRopeQuantProblem::heads_per_group)
      .def_rw("max_pos", &fm::InvRopeQuantProblem::max_pos)
      .def_rw("head_dim", &fm::InvRopeQuantProblem::head_dim)
      .def_rw("rope_dim", &fm::InvRopeQuantProblem::rope_dim)
      .def_rw("quant_chunk", &fm::InvRopeQuantProblem::quant_chunk)
      .def("group_dim", &fm::InvRopeQuantProblem::group_dim)
      .def("tokens_pad4", &fm::InvRopeQuantProblem::tokens_pad4);

  // The arrays of one call: o [T, H, 512] (T sets num_tokens), positions [T], cache [max_pos, 64];
  // outputs out_fp8 [G, T, d] and out_scales [G, d / 128, T_pad4] (or flat).
  struct RopeArgs {
    const void* o;
    const int64_t* pos;
    const float* cache;
  };
  auto rope_inputs = [](fm::InvRopeQuantProblem* p, nb::handle o, nb::handle pos, nb::handle cache, Where where, int dev,
                        Keep* keep) {
    std::vector<int64_t> os;
    const void* op = check_array(o, "o", where, dev, fm::DType::kBFloat16, {-1, -1, fm::InvRopeQuantProblem::kHeadDim}, keep,
                                 false, nullptr, &os);
    p->num_tokens = os[0];
    check(fm::validate(*p));
    if (os[1] != p->num_heads())
      bad("o: " + std::to_string(os[1]) + " heads, problem has num_groups * heads_per_group = " + std::to_string(p->num_heads()));
    RopeArgs a{op, nullptr, nullptr};
    a.pos = static_cast<const int64_t*>(check_array(pos, "positions", where, dev, fm::DType::kInt64, {p->num_tokens}, keep));
    a.cache = static_cast<const float*>(
        check_array(cache, "cos_sin_cache", where, dev, fm::DType::kFloat32, {p->max_pos, fm::InvRopeQuantProblem::kRopeDim}, keep));
    return a;
  };
  m.def("inv_rope_fp8_quant",
        [rope_inputs](const fm::InvRopeQuantProblem& problem, nb::handle o, nb::handle positions, nb::handle cos_sin_cache,
                      nb::handle out_fp8, nb::handle out_scales, std::optional<nb::handle> error_flag, uintptr_t stream) {
          const int dev = current_cuda_device();
          fm::InvRopeQuantProblem p = problem;
          Keep keep;
          const RopeArgs a = rope_inputs(&p, o, positions, cos_sin_cache, Where::kCuda, dev, &keep);
          const int64_t G = p.num_groups, d = p.group_dim();
          void* q = check_array(out_fp8, "out_fp8", Where::kCuda, dev, fm::DType::kFloat8E4M3, {G, p.num_tokens, d}, &keep, true);
          nb::ndarray<nb::ro> sv;
          if (!nb::try_cast(out_scales, sv, false)) not_an_array(out_scales, "out_scales");
          const std::vector<int64_t> sshape = sv.ndim() == 1 ? std::vector<int64_t>{fm::inv_rope_scales_elems(p)}
                                                             : std::vector<int64_t>{G, d / 128, p.tokens_pad4()};
          float* sc = static_cast<float*>(check_array(out_scales, "out_scales", Where::kCuda, dev, fm::DType::kFloat32, sshape, &keep, true));
          int32_t* flag = nullptr;
          if (error_flag && error_flag->is_valid() && !error_flag->is_none())
            flag = static_cast<int32_t*>(check_array(*error_flag, "error_flag", Where::kCuda, dev, fm::DType::kInt32, {4}, &keep, true));
          check(fm::inv_rope_fp8_quant(p, a.o, a.pos, a.cache, q, sc, flag, as_stream(stream)));
        },
        nb::arg("problem"), nb::arg("o"), nb::arg("positions"), nb::arg("cos_sin_cache"), nb::arg("out_fp8"),
        nb::arg("out_scales"), nb::arg("error_flag") = nb::none(), nb::arg("stream") = 0,
        "One launch on `stream`: o [T, H, 512] bf16 (T = o.shape[0]), positions [T] int64, cos_sin_cache [max_pos, 64]\n"
        "float32 -> out_fp8 [G, T, heads_per_group * 512] (uint8 or float8_e4m3fn), out_scales float32 [G, d / 128, T_pad4]\n"
        "(or flat). error_flag: int32 [4], zeroed by the caller, set on a position outside [0, max_pos).");
  m.def("reference_inv_rope_fp8_quant",
        [rope_inputs](const fm::InvRopeQuantProblem& problem, nb::handle o, nb::handle positions, nb::handle cos_sin_cache) {
          fm::InvRopeQuantProblem p = problem;
          Keep keep;
          const RopeArgs a = rope_inputs(&p, o, positions, cos_sin_cache, Where::kCpu, 0, &keep);
          const size_t G = static_cast<size_t>(p.num_groups), T = static_cast<size_t>(p.num_tokens),
                       d = static_cast<size_t>(p.group_dim());
          std::vector<uint8_t> q(G * T * d);
          std::vector<float> sc(static_cast<size_t>(fm::inv_rope_scales_elems(p)));
          {
            nb::gil_scoped_release unlocked;
            fm::ref::inv_rope_fp8_quant(p, static_cast<const uint16_t*>(a.o), a.pos, a.cache, q.data(), sc.data());
          }
          nb::dict r;
          r["out_fp8"] = to_numpy(std::move(q), {G, T, d});
          r["out_scales"] = to_numpy(std::move(sc), {G, d / 128, static_cast<size_t>(p.tokens_pad4())});
          return r;
        },
        nb::arg("problem"), nb::arg("o"), nb::arg("positions"), nb::arg("cos_sin_cache"),
        "The CPU reference of inv_rope_fp8_quant (the same bits): host arrays in, {'out_fp8': uint8 [G, T, d],\n"
        "'out_scales': float32 [G, d / 128, T_pad4]} out.");

  // ---- the front and back halves, for engines with their own expert GEMMs ----
  nb::class_<fm::DispatchOptions>(m, "DispatchOptions", "Options of dispatch() (fusedmoe/moe.h)")
      .def(nb::init<>())
      .def_rw("permute", &fm::DispatchOptions::permute)
      .def_rw("tile_m", &fm::DispatchOptions::tile_m)
      .def_rw("fuse_front", &fm::DispatchOptions::fuse_front)
      .def_rw("overlap_launches", &fm::DispatchOptions::overlap_launches)
      .def_rw("group_scales_by_token", &fm::DispatchOptions::group_scales_by_token);

  // Views (DLPack arrays on the device: torch.from_dlpack(v) or pass them on) into the workspace,
  // valid until the next call on it. T = the call's tokens, S = slots per token, G = weight experts.
  nb::class_<PyDispatch>(m, "DispatchResult", "What dispatch() wrote into the workspace (fusedmoe/moe.h: DispatchResult)")
      .def_prop_ro("topk_ids", [](const PyDispatch& d) {
        return d.i32(d.r.topk_ids, {size_t(d.problem.num_tokens), size_t(d.problem.top_k())}); })
      .def_prop_ro("topk_weights", [](const PyDispatch& d) {
        return d.view(d.r.topk_weights, {size_t(d.problem.num_tokens), size_t(d.problem.top_k())}, nb::dtype<float>(), d.workspace); })
      .def_prop_ro("counts", [](const PyDispatch& d) { return d.i32(d.r.counts, {size_t(d.r.num_groups)}); })
      .def_prop_ro("offsets", [](const PyDispatch& d) { return d.i32(d.r.offsets, {size_t(d.r.num_groups) + 1}); })
      .def_prop_ro("padded_offsets", [](const PyDispatch& d) { return d.i32(d.r.padded_offsets, {size_t(d.r.num_groups) + 1}); })
      .def_prop_ro("row_token", [](const PyDispatch& d) {
        return d.i32(d.r.row_token, {size_t(d.problem.num_tokens) * d.problem.slots_per_token()}); })
      .def_prop_ro("row_slot", [](const PyDispatch& d) {
        return d.i32(d.r.row_slot, {size_t(d.problem.num_tokens) * d.problem.slots_per_token()}); })
      .def_prop_ro("slot_row", [](const PyDispatch& d) {
        return d.i32(d.r.slot_row, {size_t(d.problem.num_tokens), size_t(d.problem.slots_per_token())}); })
      .def_prop_ro("act", [](const PyDispatch& d) {
        const bool q = d.problem.quant.act != fm::ActQuant::kNone;
        const dl::dtype dt = q ? nb::dtype<uint8_t>()
                               : d.problem.act_dtype == fm::DType::kBFloat16
                                     ? dl::dtype{static_cast<uint8_t>(dl::dtype_code::Bfloat), 16, 1}
                                     : dl::dtype{static_cast<uint8_t>(dl::dtype_code::Float), 16, 1};
        return d.view(d.r.act, {size_t(d.r.act_rows), size_t(d.problem.hidden)}, dt, d.x.is_valid() ? d.x : d.workspace); })
      .def_prop_ro("act_scales", [](const PyDispatch& d) {
        const int64_t pad4 = (d.r.act_rows + 3) / 4 * 4;
        size_t n = 0;
        switch (d.problem.quant.act) {
          case fm::ActQuant::kPerTensorStatic: case fm::ActQuant::kPerTensorDynamic: n = 1; break;
          case fm::ActQuant::kPerToken: n = size_t(pad4); break;
          case fm::ActQuant::kGroup128: n = size_t((d.problem.hidden + 127) / 128 * pad4); break;
          default: break;
        }
        return n ? d.view(d.r.act_scales, {n}, nb::dtype<float>(), d.workspace) : nb::none(); })
      .def_prop_ro("act_scales_by_token", [](const PyDispatch& d) {
        return d.view(d.r.act_scales_by_token, {size_t(d.problem.num_tokens), size_t(d.r.act_scales_token_stride)},
                      nb::dtype<float>(), d.workspace); })
      .def_prop_ro("act_rows", [](const PyDispatch& d) { return d.r.act_rows; })
      .def_prop_ro("num_groups", [](const PyDispatch& d) { return d.r.num_groups; })
      .def_prop_ro("fused_front", [](const PyDispatch& d) { return d.r.fused_front; })
      .def_prop_ro("launches", [](const PyDispatch& d) { return d.r.launches; })
      .def_prop_ro("problem", [](const PyDispatch& d) { return d.problem; });

  m.def("dispatch",
        [](const fm::MoeProblem& problem, nb::handle workspace, uintptr_t stream, std::optional<fm::DispatchOptions> options,
           nb::kwargs tensors) {
          const int dev = current_cuda_device();
          PyDispatch d;
          d.problem = problem;
          Keep keep;
          const fm::MoeTensors t = collect(&d.problem, tensors, Where::kCuda, dev, &keep);
          const auto [ws, ws_bytes] = device_bytes(workspace, "workspace", dev, &keep);
          const fm::DispatchOptions o = options.value_or(fm::DispatchOptions{});
          fm::Status st;
          {
            nb::gil_scoped_release unlocked;
            st = fm::dispatch(d.problem, t, ws, ws_bytes, as_stream(stream), o, &d.r);
          }
          check(st);
          d.workspace = nb::borrow(workspace);
          d.inputs = nb::borrow(tensors);
          if (d.r.act == t.x) d.x = nb::borrow(tensors["x"]);
          d.device = dev;
          return d;
        },
        nb::arg("problem"), nb::arg("workspace"), nb::kw_only(), nb::arg("stream") = 0, nb::arg("options") = nb::none(),
        nb::arg("tensors"),
        "route -> plan -> permute / quantise on `stream` into the workspace (tensors as forward()'s inputs, no out).\n"
        "Returns a DispatchResult whose attributes are DLPack views on the device (torch.from_dlpack), valid until\n"
        "the next call on this workspace: topk_ids / topk_weights [T, k], counts [G], offsets / padded_offsets [G + 1],\n"
        "row_token / row_slot [T * S] (rows in expert order, the first offsets[G] valid), slot_row [T, S] (-1: not\n"
        "local), act [act_rows, K] (e4m3 bytes when quantised; permuted: expert g's rows from padded_offsets[g], the\n"
        "padding rows stale),\n"
        "act_scales (flat; per token / 1x128 groups with the row index fastest, rows padded to 4).");
  m.def("combine",
        [](const PyDispatch& d, nb::handle expert_out, nb::handle out, uintptr_t stream) {
          const int dev = current_cuda_device();
          if (dev != d.device) bad("combine: the current device differs from the dispatch's");
          const fm::MoeProblem& p = d.problem;
          Keep keep;
          const void* eo = check_array(expert_out, "expert_out", Where::kCuda, dev, p.act_dtype,
                                       {p.num_tokens * p.slots_per_token(), p.hidden}, &keep);
          int64_t row_stride = 0;
          void* o = check_array(out, "out", Where::kCuda, dev, p.act_dtype, {p.num_tokens, p.hidden}, &keep, true, &row_stride);
          fm::Status st;
          {
            nb::gil_scoped_release unlocked;
            st = fm::combine(p, d.r, eo, o, row_stride, as_stream(stream));
          }
          check(st);
        },
        nb::arg("dispatch"), nb::arg("expert_out"), nb::arg("out"), nb::arg("stream") = 0,
        "out[t] = sum over slots (slot order, shared expert last) of weight * expert_out[slot_row[t, s]]:\n"
        "expert_out [T * S, K] in act_dtype, rows in expert order (row r of expert g at offsets[g] + ...), out [T, K].\n"
        "Deterministic (the same bits every run). With a device token count, rows past it are left unwritten.");
}
