//===- launch.cpp - the native launcher of compiled kernels ---------------===//
//
// Part of tilelang-mlir.
//
// The hot path of a kernel call, `kernel(a, b)`, in C++: the argument
// checks, the binding of symbolic sizes, the allocation of the outputs, the
// kernel-parameter buffer and the launch (`cuLaunchKernelEx` on torch's
// current stream, or the call of a CPU kernel's entry). What a call needs to
// know about its kernel (the parameter layout, the accepted dtypes, the grid
// as a small program, the launch configuration) is prepared once per kernel
// by runtime/launcher.py and handed over as a "plan".
//
// The fast path takes only the common, valid case: torch tensors of exactly
// torch.Tensor (or Parameter) or NumPy arrays of exactly ndarray, Python
// scalars of exactly int/float/bool, every check passing. Anything else (a
// subclass, a wrong dtype, a shape, device or layout that fails a check, a
// context it has not seen) goes to the Python path, `kernel._call_python`,
// which binds the arguments as before and raises the errors it always
// raised: every error message comes from one place.
//
// The module links neither torch, nor libcuda, nor MLIR: the functions it
// calls are handed over as addresses (runtime/launcher.py finds them with
// ctypes in the libraries torch and cuda-python loaded): torch's stable C
// shim (the `aoti_torch_*` functions AOTInductor uses), THPVariable_Wrap,
// and the driver's cuCtxGetCurrent and cuLaunchKernelEx. It reads a
// torch.Tensor through the at::Tensor inside the Python object (its offset is
// probed and checked against `_cdata` at set-up) and an ndarray through
// NumPy's object layout (checked likewise). Where a probe fails, the piece is
// left off and the Python path serves.
//
// Built with the package (python/CMakeLists.txt) or, where the package runs
// from a source tree, by `python -m tilelang_mlir.runtime.launcher build`:
// it needs only a C++ compiler and Python's headers.
//
//===----------------------------------------------------------------------===//

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <memory>
#include <new>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// Foreign functions
//===----------------------------------------------------------------------===//

using Handle = void *; // AtenTensorHandle: an at::Tensor *
using AotiError = int32_t;

struct TorchApi {
  bool enabled = false;
  Py_ssize_t offset = 0; // of the at::Tensor inside a THPVariable
  PyTypeObject *tensor = nullptr, *parameter = nullptr;
  int32_t cpu = 0, cuda = 1, strided = 0;
  AotiError (*dtype)(Handle, int32_t *) = nullptr;
  AotiError (*device_type)(Handle, int32_t *) = nullptr;
  AotiError (*device_index)(Handle, int32_t *) = nullptr;
  AotiError (*layout)(Handle, int32_t *) = nullptr;
  AotiError (*dim)(Handle, int64_t *) = nullptr;
  AotiError (*sizes)(Handle, int64_t **) = nullptr;
  AotiError (*strides)(Handle, int64_t **) = nullptr;
  AotiError (*data_ptr)(Handle, void **) = nullptr;
  AotiError (*contiguous)(Handle, bool *) = nullptr;
  AotiError (*empty_strided)(int64_t, const int64_t *, const int64_t *, int32_t,
                             int32_t, int32_t, Handle *) = nullptr;
  AotiError (*destroy)(Handle) = nullptr;
  PyObject *(*wrap)(const void *) = nullptr; // THPVariable_Wrap(const TensorBase &)
  AotiError (*cuda_stream)(int32_t, void **) = nullptr;
  PyObject *raw_stream = nullptr; // torch._C._cuda_getCurrentRawStream
};
TorchApi torch_api;

// NumPy's object layouts (numpy/ndarraytypes.h; the same in NumPy 1 and 2
// for these leading fields).
struct NumpyArray {
  PyObject_HEAD char *data;
  int nd;
  int64_t *dimensions;
  int64_t *strides;
  PyObject *base;
  PyObject *descr;
  int flags;
};
struct NumpyDescr {
  PyObject_HEAD PyTypeObject *typeobj;
  char kind, type, byteorder, former_flags;
  int type_num;
};
constexpr int kNumpyCContiguous = 0x1;

struct NumpyApi {
  bool enabled = false;
  PyTypeObject *ndarray = nullptr;
  PyObject *empty = nullptr; // numpy.empty
};
NumpyApi numpy_api;

// The driver's CUlaunchConfig (cuda.h), without attributes.
struct LaunchConfig {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
  void *stream;
  void *attrs;
  unsigned num_attrs;
};

struct CudaApi {
  bool enabled = false;
  int (*ctx_get_current)(void **) = nullptr;
  int (*launch_ex)(const LaunchConfig *, void *, void **, void **) = nullptr;
};
CudaApi cuda_api;

// The switch of tests and measurements: when false, every call takes the
// Python path.
bool native_enabled = true;
// TileLang's output conventions (the compat route): a CPU call with no tensor
// input allocates torch outputs, and several outputs come back as a list.
bool tilelang_outputs = false;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

// A buffer on the stack for the common sizes, on the heap beyond.
template <typename T, size_t N> struct Scratch {
  T inline_[N];
  std::unique_ptr<T[]> heap;
  T *data;
  explicit Scratch(size_t n) {
    if (n <= N) {
      data = inline_;
    } else {
      heap.reset(new T[n]);
      data = heap.get();
    }
  }
  T &operator[](size_t i) { return data[i]; }
};

// A vector of trivially copyable T with room for N elements inline: the
// per-call state of a call allocates nothing for the common sizes.
template <typename T, size_t N> class Small {
  union Room { // (a union: its elements are not constructed, assign() writes them)
    T items[N];
    Room() {}
  } room_;
  T *data_ = room_.items;
  size_t size_ = 0, capacity_ = N;
  std::unique_ptr<T[]> heap_;

public:
  Small() = default;
  Small(const Small &) = delete;
  Small &operator=(const Small &) = delete;
  void reserve(size_t n) {
    if (n <= capacity_)
      return;
    std::unique_ptr<T[]> grown(new T[n]);
    if (size_)
      memcpy(static_cast<void *>(grown.get()), data_, size_ * sizeof(T));
    heap_ = std::move(grown);
    data_ = heap_.get();
    capacity_ = n;
  }
  void assign(size_t n, const T &value) {
    reserve(n);
    for (size_t i = 0; i < n; ++i)
      data_[i] = value;
    size_ = n;
  }
  void clear() { size_ = 0; }
  void push_back(const T &value) {
    if (size_ == capacity_)
      reserve(2 * capacity_);
    data_[size_++] = value;
  }
  size_t size() const { return size_; }
  T *data() { return data_; }
  const T *data() const { return data_; }
  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }
};

bool as_u64(PyObject *o, uint64_t &out) {
  out = PyLong_AsUnsignedLongLong(o);
  return !(out == (uint64_t)-1 && PyErr_Occurred());
}

bool as_i64(PyObject *o, int64_t &out) {
  out = PyLong_AsLongLong(o);
  return !(out == -1 && PyErr_Occurred());
}

bool is_exact_int(PyObject *o) { return Py_TYPE(o) == &PyLong_Type; }

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

enum class Source { None, Torch, Numpy };

struct TensorView {
  void *ptr = nullptr;
  int64_t rank = 0;
  const int64_t *sizes = nullptr;
  const int64_t *strides = nullptr; // in elements
  int32_t dtype = -1;               // torch ScalarType, or NumPy type number
  int32_t device_index = -1;
  Source source = Source::None;
};

bool is_torch(PyObject *x) {
  PyTypeObject *t = Py_TYPE(x);
  return torch_api.enabled && (t == torch_api.tensor || t == torch_api.parameter);
}

bool is_numpy(PyObject *x) {
  return numpy_api.enabled && Py_TYPE(x) == numpy_api.ndarray;
}

// Reads a torch tensor on `device_type`; false where the fast path does not
// take it (the Python path then checks it and says why).
// torch's contiguity (TensorImpl::compute_contiguous), for a torch whose
// shim lacks aoti_torch_is_contiguous.
bool row_major(int64_t rank, const int64_t *sizes, const int64_t *strides) {
  int64_t expected = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] == 0)
      return true;
    if (sizes[d] != 1) {
      if (strides[d] != expected)
        return false;
      expected *= sizes[d];
    }
  }
  return true;
}

bool read_torch(PyObject *x, int32_t device_type, TensorView &v) {
  Handle h = reinterpret_cast<char *>(x) + torch_api.offset;
  int32_t layout, type;
  bool contiguous;
  int64_t *sizes, *strides;
  if ((torch_api.layout && (torch_api.layout(h, &layout) || layout != torch_api.strided)) ||
      torch_api.device_type(h, &type) || type != device_type ||
      torch_api.dtype(h, &v.dtype) || torch_api.device_index(h, &v.device_index) ||
      torch_api.dim(h, &v.rank) || torch_api.sizes(h, &sizes) ||
      torch_api.strides(h, &strides))
    return false;
  if (torch_api.contiguous ? (torch_api.contiguous(h, &contiguous) || !contiguous)
                           : !row_major(v.rank, sizes, strides))
    return false;
  if (torch_api.data_ptr(h, &v.ptr))
    return false;
  v.sizes = sizes;
  v.strides = strides;
  v.source = Source::Torch;
  return true;
}

// Reads a NumPy array (C-contiguous, native byte order); its strides are
// converted to elements into `strides`.
bool read_numpy(PyObject *x, int64_t itemsize, int64_t *strides, TensorView &v) {
  auto *a = reinterpret_cast<NumpyArray *>(x);
  auto *d = reinterpret_cast<NumpyDescr *>(a->descr);
  if (!(a->flags & kNumpyCContiguous) || d->byteorder == '>')
    return false;
  v.ptr = a->data;
  v.rank = a->nd;
  v.sizes = a->dimensions;
  for (int i = 0; i < a->nd; ++i) {
    if (a->strides[i] % itemsize)
      return false;
    strides[i] = a->strides[i] / itemsize;
  }
  v.strides = strides;
  v.dtype = d->type_num;
  v.source = Source::Numpy;
  return true;
}

//===----------------------------------------------------------------------===//
// The plan of a kernel
//===----------------------------------------------------------------------===//

enum ScalarKind : int { kSigned = 0, kUnsigned = 1, kBool = 2, kFloat32 = 3, kFloat64 = 4 };

struct Param {
  bool tensor = false;
  bool input = false;
  int alloc = 0; // 0: passed by the caller; 1: an output (returned); 2: a workspace
  // Tensors
  std::vector<int64_t> dims; // >= 0 static, < 0: symbol -(d + 1)
  std::vector<int32_t> torch_dtypes, numpy_dtypes;
  int32_t out_torch = -1;
  PyObject *out_numpy = nullptr; // the NumPy dtype of an allocated array
  std::vector<uint8_t> torch_poison, numpy_poison; // one element's NaN, CPU outputs
  int64_t itemsize = 1, numpy_itemsize = 1;
  // Scalars
  int kind = kSigned;
  int bytes = 0;
  int64_t lo = 0;
  uint64_t hi = 0;
};

// A grid axis: (opcode, operand) pairs of a stack program.
enum GridOp : int64_t {
  kConst = 0, kSym = 1, kScalar = 2, kSms = 3, kAdd = 4, kSub = 5, kMul = 6,
  kFloorDiv = 7, kCeilDiv = 8, kMod = 9, kMax = 10, kMin = 11
};

struct MapEntry {
  uint64_t ptr = 0;
  int64_t rank = -1;
  int64_t sizes[5], strides[5];
  alignas(64) uint8_t bytes[128];
};

// One TMA tensor map of a part: the tensor parameter it describes and the
// maps encoded lately (by address, sizes and strides).
struct TensorMap {
  int param = 0;
  std::vector<MapEntry> cache;
  size_t next = 0; // the entry replaced on the next miss
};

struct Part {
  std::vector<int64_t> grid[3];
  unsigned block[3] = {1, 1, 1};
  unsigned shared = 0;
  std::vector<TensorMap> maps;
};

struct Context {
  void *ctx = nullptr;
  int32_t device = 0;
  int64_t sms = 0;
  std::vector<void *> functions; // one per part
};

struct Plan {
  bool cuda = false;
  int inputs = 0;
  int symbols = 0;
  std::vector<Param> params;
  std::vector<int> allocs; // parameter indices, in allocation order
  int returned = 0;
  // Where each tensor's sizes and strides go in Bound::shapes (NumPy inputs,
  // outputs), and how much room they take.
  std::vector<size_t> shape_offset;
  size_t shape_room = 0;
  // CUDA
  std::vector<Part> parts;
  // Shared: a call keeps the context it launches in while a callback into
  // Python (which may release the GIL) lets another thread add one.
  std::vector<std::shared_ptr<const Context>> contexts;
  size_t words = 0; // 64-bit words of the parameter buffer (without maps)
  // CPU
  void (*entry)(void *) = nullptr;
  int (*guarded)(void (*)(void *), void *, void *) = nullptr;
  bool flush = false;
  ~Plan() {
    for (Param &p : params)
      Py_XDECREF(p.out_numpy);
  }
};

//===----------------------------------------------------------------------===//
// Grids
//===----------------------------------------------------------------------===//

bool floor_div(int64_t a, int64_t b, int64_t &out) {
  if (b == 0 || (a == INT64_MIN && b == -1))
    return false;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  out = q;
  return true;
}

bool eval_grid(const std::vector<int64_t> &code, const int64_t *symbols,
               const int64_t *scalars, int64_t sms, int64_t &out) {
  int64_t stack[32];
  int top = 0;
  for (size_t i = 0; i + 1 < code.size(); i += 2) {
    int64_t op = code[i], arg = code[i + 1];
    if (op <= kSms) {
      if (top == 32)
        return false;
      int64_t v;
      switch (op) {
      case kConst: v = arg; break;
      case kSym: v = symbols[arg]; break;
      case kScalar: v = scalars[arg]; break;
      default: // kSms: the count rounded down to a multiple of arg, at least arg
        if (sms <= 0)
          return false;
        v = sms / arg * arg;
        if (v < arg)
          v = arg;
      }
      stack[top++] = v;
      continue;
    }
    if (top < 2)
      return false;
    int64_t b = stack[--top], a = stack[top - 1], r;
    switch (op) {
    case kAdd: if (__builtin_add_overflow(a, b, &r)) return false; break;
    case kSub: if (__builtin_sub_overflow(a, b, &r)) return false; break;
    case kMul: if (__builtin_mul_overflow(a, b, &r)) return false; break;
    case kFloorDiv: if (!floor_div(a, b, r)) return false; break;
    case kCeilDiv:
      if (a == INT64_MIN || !floor_div(-a, b, r)) return false;
      r = -r;
      break;
    case kMod: {
      int64_t q;
      if (!floor_div(a, b, q)) return false;
      r = a - q * b;
      break;
    }
    case kMax: r = a > b ? a : b; break;
    case kMin: r = a < b ? a : b; break;
    default: return false;
    }
    stack[top - 1] = r;
  }
  if (top != 1)
    return false;
  out = stack[0];
  return true;
}

const int64_t kGridLimits[3] = {2147483647LL, 65535, 65535};

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

// The arguments of one call, checked, with the outputs allocated.
// (Inline room for the common sizes: a call allocates nothing of its own.)
struct Bound {
  const Plan &plan;
  Small<TensorView, 16> views;
  Small<uint64_t, 16> scalars; // bit patterns, one per parameter (unused for tensors)
  Small<int64_t, 16> ints;     // integer scalar values, for grids
  Small<int64_t, 8> symbols;
  Small<int64_t, 64> shapes;   // sizes and strides owned here (NumPy, outputs)
  Small<PyObject *, 8> outputs; // new references, in allocation order
  Source source = Source::None;
  int32_t device = -1;

  explicit Bound(const Plan &p) : plan(p) {}
  ~Bound() {
    for (size_t i = 0; i < outputs.size(); ++i)
      Py_XDECREF(outputs[i]);
  }
};

bool accepts(const std::vector<int32_t> &codes, int32_t code) {
  for (int32_t c : codes)
    if (c == code)
      return true;
  return false;
}

bool bind_scalar(const Param &p, PyObject *x, uint64_t &bits, int64_t &value) {
  switch (p.kind) {
  case kFloat32:
  case kFloat64: {
    double d;
    if (PyFloat_CheckExact(x)) {
      d = PyFloat_AS_DOUBLE(x);
    } else if (is_exact_int(x)) {
      d = PyLong_AsDouble(x);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
    } else {
      return false;
    }
    if (p.kind == kFloat32) {
      float f = (float)d;
      uint32_t u;
      memcpy(&u, &f, 4);
      bits = u;
    } else {
      memcpy(&bits, &d, 8);
    }
    return true;
  }
  case kBool:
    if (x == Py_True || x == Py_False) {
      bits = x == Py_True;
    } else if (is_exact_int(x)) {
      int t = PyObject_IsTrue(x);
      if (t < 0) {
        PyErr_Clear();
        return false;
      }
      bits = (uint64_t)t;
    } else {
      return false;
    }
    value = (int64_t)bits;
    return true;
  default:
    break;
  }
  if (!is_exact_int(x))
    return false;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (p.kind == kSigned) {
    if (overflow || v < p.lo || v > (int64_t)p.hi)
      return false;
    bits = (uint64_t)v;
    value = v;
    return true;
  }
  // Unsigned: 0 .. hi (beyond int64 for uint64).
  uint64_t u;
  if (overflow > 0) {
    u = PyLong_AsUnsignedLongLong(x);
    if (u == (uint64_t)-1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  } else if (overflow < 0 || v < 0) {
    return false;
  } else {
    u = (uint64_t)v;
  }
  if (u > p.hi)
    return false;
  bits = u;
  // A grid reads it as a signed value; one past int64 makes the grid fail.
  value = u > (uint64_t)INT64_MAX ? -1 : (int64_t)u;
  return true;
}

// Fills an output with its NaN pattern (CPU outputs are poisoned so that
// elements a kernel forgot to write show up).
void poison(void *data, int64_t count, const std::vector<uint8_t> &pattern) {
  size_t n = pattern.size();
  if (!n || count <= 0)
    return;
  auto *dst = static_cast<uint8_t *>(data);
  if (n == 4) {
    uint32_t v;
    memcpy(&v, pattern.data(), 4);
    auto *d = reinterpret_cast<uint32_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      d[i] = v;
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    memcpy(dst + i * n, pattern.data(), n);
}

PyObject *allocate_torch(const Param &p, int64_t rank, const int64_t *sizes,
                         const int64_t *strides, int32_t device_type, int32_t device) {
  Handle h = nullptr;
  if (torch_api.empty_strided(rank, sizes, strides, p.out_torch, device_type, device, &h) || !h)
    return nullptr;
  PyObject *out = torch_api.wrap(h);
  torch_api.destroy(h);
  return out;
}

PyObject *allocate_numpy(const Param &p, int64_t rank, const int64_t *sizes) {
  PyObject *shape = PyTuple_New(rank);
  if (!shape)
    return nullptr;
  for (int64_t i = 0; i < rank; ++i) {
    PyObject *d = PyLong_FromLongLong(sizes[i]);
    if (!d) {
      Py_DECREF(shape);
      return nullptr;
    }
    PyTuple_SET_ITEM(shape, i, d);
  }
  PyObject *args[2] = {shape, p.out_numpy};
  PyObject *out = PyObject_Vectorcall(numpy_api.empty, args, 2, nullptr);
  Py_DECREF(shape);
  return out;
}

// Checks the arguments against the plan and allocates the outputs. Returns
// 1 when bound, 0 when the fast path does not take the call (nothing is
// raised), -1 on an error raised here (allocation).
int bind(const Plan &plan, PyObject *const *args, Py_ssize_t nargs, int32_t device, Bound &b) {
  if (nargs != plan.inputs)
    return 0;
  size_t n = plan.params.size();
  b.views.assign(n, TensorView());
  b.scalars.assign(n, 0);
  b.ints.assign(n, 0);
  b.symbols.assign(plan.symbols, -1);
  b.device = device;
  // Room for the NumPy strides and the outputs' sizes and strides.
  b.shapes.assign(plan.shape_room, 0);
  int32_t device_type = plan.cuda ? torch_api.cuda : torch_api.cpu;
  Py_ssize_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    const Param &p = plan.params[i];
    if (!p.input)
      continue;
    int64_t rank = (int64_t)p.dims.size();
    int64_t *own = b.shapes.data() + plan.shape_offset[i];
    PyObject *x = args[next++];
    if (!p.tensor) {
      if (!bind_scalar(p, x, b.scalars[i], b.ints[i]))
        return 0;
      continue;
    }
    TensorView &v = b.views[i];
    if (is_torch(x)) {
      if (b.source == Source::Numpy || !read_torch(x, device_type, v) ||
          !accepts(p.torch_dtypes, v.dtype) || (plan.cuda && v.device_index != device))
        return 0;
    } else if (is_numpy(x) && !plan.cuda) {
      if (b.source == Source::Torch || (int64_t)reinterpret_cast<NumpyArray *>(x)->nd != rank ||
          !read_numpy(x, p.numpy_itemsize, own + rank, v) || !accepts(p.numpy_dtypes, v.dtype))
        return 0;
    } else {
      return 0;
    }
    b.source = v.source;
    if (v.rank != rank)
      return 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t want = p.dims[d], have = v.sizes[d];
      if (want >= 0) {
        if (want != have)
          return 0;
      } else {
        int64_t &s = b.symbols[-(want + 1)];
        if (s < 0)
          s = have;
        else if (s != have)
          return 0;
      }
    }
  }
  if (b.source == Source::None) // no tensor input: TileLang's outputs are torch's
    b.source = plan.cuda || tilelang_outputs ? Source::Torch : Source::Numpy;
  if ((b.source == Source::Torch && !torch_api.enabled) ||
      (b.source == Source::Numpy && !numpy_api.enabled))
    return 0;
  // The outputs and workspaces.
  for (int i : plan.allocs) {
    const Param &p = plan.params[i];
    int64_t rank = (int64_t)p.dims.size();
    int64_t *sizes = b.shapes.data() + plan.shape_offset[i], *strides = sizes + rank;
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t want = p.dims[d];
      sizes[d] = want >= 0 ? want : b.symbols[-(want + 1)];
      if (sizes[d] < 0)
        return 0; // a size no input gave
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      strides[d] = count;
      count *= sizes[d];
    }
    PyObject *out;
    TensorView &v = b.views[i];
    if (b.source == Source::Torch) {
      if (p.out_torch < 0)
        return 0;
      out = allocate_torch(p, rank, sizes, strides, device_type, plan.cuda ? device : -1);
      if (!out)
        return 0;
      Handle h = reinterpret_cast<char *>(out) + torch_api.offset;
      if (torch_api.data_ptr(h, &v.ptr)) {
        Py_DECREF(out);
        return 0;
      }
      if (!plan.cuda)
        poison(v.ptr, count, p.torch_poison);
    } else {
      if (!p.out_numpy)
        return 0;
      out = allocate_numpy(p, rank, sizes);
      if (!out)
        return -1;
      if (Py_TYPE(out) != numpy_api.ndarray) {
        Py_DECREF(out);
        return 0;
      }
      v.ptr = reinterpret_cast<NumpyArray *>(out)->data;
      poison(v.ptr, count, p.numpy_poison);
    }
    v.rank = rank;
    v.sizes = sizes;
    v.strides = strides;
    b.outputs.push_back(out);
  }
  return 1;
}

PyObject *results(const Plan &plan, Bound &b) {
  if (plan.returned == 0)
    Py_RETURN_NONE;
  if (plan.returned == 1) {
    PyObject *out = b.outputs[0];
    Py_INCREF(out);
    return out;
  }
  // Several outputs: a tuple, or a list as TileLang returns them.
  PyObject *t = tilelang_outputs ? PyList_New(plan.returned) : PyTuple_New(plan.returned);
  if (!t)
    return nullptr;
  int k = 0;
  for (size_t j = 0; j < plan.allocs.size(); ++j) {
    if (plan.params[plan.allocs[j]].alloc != 1)
      continue;
    Py_INCREF(b.outputs[j]);
    if (tilelang_outputs)
      PyList_SET_ITEM(t, k++, b.outputs[j]);
    else
      PyTuple_SET_ITEM(t, k++, b.outputs[j]);
  }
  return t;
}

//===----------------------------------------------------------------------===//
// Launching
//===----------------------------------------------------------------------===//

// Writes a tensor's memref descriptor (allocated and aligned pointer, offset
// 0, sizes, strides in elements: the kernel ABI); returns its words.
int64_t write_descriptor(uint64_t *w, const TensorView &v) {
  uint64_t ptr = reinterpret_cast<uintptr_t>(v.ptr);
  w[0] = ptr, w[1] = ptr, w[2] = 0;
  for (int64_t d = 0; d < v.rank; ++d) {
    w[3 + d] = (uint64_t)v.sizes[d];
    w[3 + v.rank + d] = (uint64_t)v.strides[d];
  }
  return 3 + 2 * v.rank;
}

// The kernel-parameter buffer of one CUDA part: the tensor maps (128 bytes,
// 64-byte aligned) first, then per parameter its memref descriptor words or
// its scalar, following the kernel ABI of runtime/cuda.py.
struct ParamBuffer {
  Small<uint64_t, 192> words; // 8-byte aligned storage (maps at 64-byte offsets)
  Small<void *, 96> slots;
  uint64_t *aligned = nullptr;

  // Sizes the buffer for `part`; its maps' bytes go to map(m), then
  // finish() writes the parameters.
  void begin(const Plan &plan, const Part &part) {
    words.assign(plan.words + part.maps.size() * 16 + 8, 0);
    uintptr_t addr = reinterpret_cast<uintptr_t>(words.data());
    aligned = reinterpret_cast<uint64_t *>((addr + 63) & ~uintptr_t(63));
    slots.clear();
    for (size_t m = 0; m < part.maps.size(); ++m)
      slots.push_back(aligned + 16 * m);
  }
  uint8_t *map(size_t m) { return reinterpret_cast<uint8_t *>(aligned + 16 * m); }
  void finish(const Plan &plan, const Part &part, const Bound &b) {
    uint64_t *w = aligned + 16 * part.maps.size();
    for (size_t i = 0; i < plan.params.size(); ++i) {
      const Param &p = plan.params[i];
      if (!p.tensor) {
        *w = b.scalars[i];
        slots.push_back(w++);
        continue;
      }
      int64_t count = write_descriptor(w, b.views[i]);
      for (int64_t k = 0; k < count; ++k)
        slots.push_back(w + k);
      w += count;
    }
  }
};

// The grid of a part; 0 when it does not evaluate (the Python path then
// raises), 1 when it does, 2 when it is empty (nothing to launch).
int part_grid(const Part &part, const Bound &b, int64_t sms, unsigned grid[3]) {
  bool empty = false;
  for (int a = 0; a < 3; ++a) {
    int64_t v;
    if (!eval_grid(part.grid[a], b.symbols.data(), b.ints.data(), sms, v) || v < 0 ||
        v > kGridLimits[a])
      return 0;
    empty |= v == 0;
    grid[a] = (unsigned)v;
  }
  return empty ? 2 : 1;
}

std::shared_ptr<const Context> current_context(const Plan &plan) {
  void *ctx = nullptr;
  if (!cuda_api.enabled || cuda_api.ctx_get_current(&ctx) || !ctx)
    return nullptr;
  for (const auto &c : plan.contexts)
    if (c->ctx == ctx)
      return c;
  return nullptr;
}

bool current_stream(int32_t device, void *&stream) {
  if (torch_api.cuda_stream)
    return torch_api.cuda_stream(device, &stream) == 0;
  if (!torch_api.raw_stream)
    return false;
  PyObject *d = PyLong_FromLong(device);
  if (!d)
    return false;
  PyObject *s = PyObject_CallOneArg(torch_api.raw_stream, d);
  Py_DECREF(d);
  if (!s)
    return false;
  stream = PyLong_AsVoidPtr(s);
  Py_DECREF(s);
  return !PyErr_Occurred();
}

//===----------------------------------------------------------------------===//
// The Launcher type: the base class of runtime.kernel.Kernel
//===----------------------------------------------------------------------===//

struct Launcher {
  // Shared: a call keeps the plan it started with (a CPU kernel runs without
  // the GIL; a callback into Python may let another thread set a new plan).
  PyObject_HEAD std::shared_ptr<Plan> *plan;
  int state; // 0: not yet set up, 1: the fast path serves, 2: the Python path only
  PyObject *weakrefs;
  vectorcallfunc vectorcall; // launcher_vectorcall (see with_vectorcall)
};

PyObject *str_call_python, *str_native_setup;
PyTypeObject LauncherType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// A call of an instance goes through its vectorcall slot (no argument
// tuple) where its type has the flag. Python 3.12 passes the flag on to
// subclasses defined in Python (Kernel, JITFunction) that keep our tp_call;
// before 3.12 only static types inherit it, so it is set here, on the first
// instance of such a subclass, under 3.12's condition (tp_call still ours,
// the slot's offset inherited). (A class whose __call__ is reassigned later
// keeps the flag before 3.12; nothing here does that.)
void with_vectorcall(PyTypeObject *type, ternaryfunc call, Py_ssize_t offset) {
#if PY_VERSION_HEX < 0x030C0000
  if (!(type->tp_flags & Py_TPFLAGS_HAVE_VECTORCALL) && type->tp_call == call &&
      type->tp_vectorcall_offset == offset)
    type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
#else
  (void)type, (void)call, (void)offset;
#endif
}

PyObject *call_python(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  PyObject *method = PyObject_GetAttr(self, str_call_python);
  if (!method)
    return nullptr;
  PyObject *out = PyObject_Vectorcall(method, args, nargsf, kwnames);
  Py_DECREF(method);
  return out;
}

// Copies the encoded bytes of tensor map `m` of part `k` for the bound
// tensor to `dst`; false with an error raised where it cannot be encoded.
bool tensor_map(PyObject *self, Plan &plan, size_t k, size_t m, const Bound &b, uint8_t *dst) {
  TensorMap &map = plan.parts[k].maps[m];
  const TensorView &v = b.views[map.param];
  uint64_t ptr = reinterpret_cast<uintptr_t>(v.ptr);
  for (MapEntry &e : map.cache) {
    if (e.ptr != ptr || e.rank != v.rank)
      continue;
    bool same = true;
    for (int64_t d = 0; d < v.rank && same; ++d)
      same = e.sizes[d] == v.sizes[d] && e.strides[d] == v.strides[d];
    if (same) {
      memcpy(dst, e.bytes, 128);
      return true;
    }
  }
  if (v.rank > 5) {
    PyErr_SetString(PyExc_ValueError, "a tensor map describes a tensor of rank 1 to 5");
    return false;
  }
  PyObject *sizes = PyTuple_New(v.rank), *strides = PyTuple_New(v.rank);
  if (!sizes || !strides) {
    Py_XDECREF(sizes);
    Py_XDECREF(strides);
    return false;
  }
  for (int64_t d = 0; d < v.rank; ++d) {
    PyTuple_SET_ITEM(sizes, d, PyLong_FromLongLong(v.sizes[d]));
    PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(v.strides[d]));
  }
  PyObject *encoded = PyObject_CallMethod(self, "_encode_map", "nnKOO", (Py_ssize_t)k,
                                          (Py_ssize_t)m, (unsigned long long)ptr, sizes, strides);
  Py_DECREF(sizes);
  Py_DECREF(strides);
  if (!encoded)
    return false;
  if (!PyBytes_Check(encoded) || PyBytes_GET_SIZE(encoded) != 128) {
    Py_DECREF(encoded);
    PyErr_SetString(PyExc_RuntimeError, "a tensor map must be 128 bytes");
    return false;
  }
  if (map.cache.size() < 8) {
    map.cache.emplace_back();
  }
  MapEntry &e = map.cache[map.next % map.cache.size()];
  map.next = (map.next + 1) % 8;
  e.ptr = ptr;
  e.rank = v.rank;
  for (int64_t d = 0; d < v.rank; ++d)
    e.sizes[d] = v.sizes[d], e.strides[d] = v.strides[d];
  memcpy(e.bytes, PyBytes_AS_STRING(encoded), 128);
  memcpy(dst, e.bytes, 128);
  Py_DECREF(encoded);
  return true;
}

// Runs a CPU kernel's entry on its argument slots (without the GIL); false,
// with the kernel's DeviceAssertionError raised, when a device assertion
// stopped it.
bool run_entry(PyObject *kernel, const Plan &plan, void **slots) {
  struct { // cpu_runtime.c's tile_failure
    char message[512], file[512], function[256];
    int32_t line;
    int64_t block[3];
  } failure;
  int stopped = 0;
  Py_BEGIN_ALLOW_THREADS;
  if (plan.guarded)
    stopped = plan.guarded(plan.entry, slots, &failure);
  else
    plan.entry(slots);
  if (plan.flush)
    fflush(nullptr);
  Py_END_ALLOW_THREADS;
  if (!stopped)
    return true;
  failure.message[511] = failure.file[511] = failure.function[255] = 0;
  PyObject *r = PyObject_CallMethod(kernel, "_assert_failed", "yyiy(LLL)", failure.message,
                                    failure.file, (int)failure.line, failure.function,
                                    (long long)failure.block[0], (long long)failure.block[1],
                                    (long long)failure.block[2]);
  Py_XDECREF(r);
  if (!PyErr_Occurred())
    PyErr_SetString(PyExc_RuntimeError, "a device assertion failed");
  return false;
}

// Raises the error of a failed launch (the kernel's message, with the
// CUresult's name).
void launch_failed(PyObject *kernel, size_t part, int code, int device, const unsigned grid[3]) {
  PyObject *r = PyObject_CallMethod(kernel, "_launch_failed", "nii(III)", (Py_ssize_t)part, code,
                                    device, grid[0], grid[1], grid[2]);
  Py_XDECREF(r);
  if (!PyErr_Occurred())
    PyErr_Format(PyExc_RuntimeError, "cuLaunchKernelEx failed with CUresult %d", code);
}

// Launches every part of a CUDA plan on bound arguments; 1 on success, 0
// when the fast path cannot (nothing raised), -1 on an error raised.
int launch_cuda(PyObject *self, Plan &plan, const Context &c, const Bound &b) {
  void *stream = nullptr;
  if (!current_stream(c.device, stream)) {
    PyErr_Clear();
    return 0;
  }
  // Grids first: a grid the fast path cannot evaluate must leave every part
  // unlaunched for the Python path.
  size_t n = plan.parts.size();
  Scratch<unsigned, 12> grids(3 * n);
  Scratch<int, 4> run(n);
  for (size_t k = 0; k < n; ++k) {
    run[k] = part_grid(plan.parts[k], b, c.sms, &grids[3 * k]);
    if (!run[k])
      return 0;
  }
  ParamBuffer buffer;
  for (size_t k = 0; k < n; ++k) {
    if (run[k] == 2)
      continue; // an empty grid launches nothing
    const Part &part = plan.parts[k];
    buffer.begin(plan, part);
    for (size_t m = 0; m < part.maps.size(); ++m)
      if (!tensor_map(self, plan, k, m, b, buffer.map(m)))
        return -1;
    buffer.finish(plan, part, b);
    LaunchConfig config = {{grids[3 * k], grids[3 * k + 1], grids[3 * k + 2]},
                           {part.block[0], part.block[1], part.block[2]},
                           part.shared, stream, nullptr, 0};
    int code = cuda_api.launch_ex(&config, c.functions[k], buffer.slots.data(), nullptr);
    if (code) {
      launch_failed(self, k, code, c.device, &grids[3 * k]);
      return -1;
    }
  }
  return 1;
}

// The `void **` of a CPU kernel's packed entry: per parameter a pointer to
// its argument, a memref descriptor pointer for a tensor (runtime/cpu.py).
// `words` holds plan.words words, `descriptors` and `slots` one per parameter.
void pack_cpu(const Plan &plan, const Bound &b, uint64_t *words, void **descriptors,
              void **slots) {
  uint64_t *w = words;
  for (size_t i = 0; i < plan.params.size(); ++i) {
    if (!plan.params[i].tensor) {
      *w = b.scalars[i];
      slots[i] = w++;
      continue;
    }
    descriptors[i] = w;
    slots[i] = &descriptors[i];
    w += write_descriptor(w, b.views[i]);
  }
}

int run_cpu(PyObject *self, const Plan &plan, const Bound &b) {
  size_t n = plan.params.size();
  Scratch<void *, 16> slots(n), descriptors(n);
  Scratch<uint64_t, 64> words(plan.words + 1);
  pack_cpu(plan, b, words.data, descriptors.data, slots.data);
  return run_entry(self, plan, slots.data) ? 1 : -1;
}

// The fast path of a call: 1 done (*out is the result, or null with an
// error raised), 0 when it does not take the call.
int fast_call(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject **out) {
  if (!native_enabled || self->state != 1)
    return 0;
  std::shared_ptr<Plan> keep = *self->plan;
  Plan &plan = *keep;
  std::shared_ptr<const Context> c;
  if (plan.cuda) {
    c = current_context(plan);
    if (!c)
      return 0;
  }
  Bound b(plan);
  int bound = bind(plan, args, nargs, c ? c->device : -1, b);
  if (bound <= 0) {
    if (bound < 0) {
      *out = nullptr;
      return 1;
    }
    PyErr_Clear();
    return 0;
  }
  PyObject *self_obj = reinterpret_cast<PyObject *>(self);
  int done = plan.cuda ? launch_cuda(self_obj, plan, *c, b) : run_cpu(self_obj, plan, b);
  if (done == 0)
    return 0;
  *out = done < 0 ? nullptr : results(plan, b);
  return 1;
}

bool ensure_setup(Launcher *self) {
  if (self->state != 0)
    return true;
  PyObject *r = PyObject_CallMethodNoArgs(reinterpret_cast<PyObject *>(self), str_native_setup);
  if (!r)
    return false;
  Py_DECREF(r);
  if (self->state == 0)
    self->state = 2;
  return true;
}

PyObject *launcher_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (!kwnames && native_enabled) {
    if (!ensure_setup(self))
      return nullptr;
    PyObject *out;
    if (fast_call(self, args, nargs, &out))
      return out;
  }
  return call_python(obj, args, nargs, kwnames);
}

PyObject *launcher_call(PyObject *obj, PyObject *args, PyObject *kwargs) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject *const *items = &PyTuple_GET_ITEM(args, 0);
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *method = PyObject_GetAttr(obj, str_call_python);
    if (!method)
      return nullptr;
    PyObject *out = PyObject_Call(method, args, kwargs);
    Py_DECREF(method);
    return out;
  }
  return launcher_vectorcall(obj, items, n, nullptr);
}

void launcher_dealloc(PyObject *obj) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  if (self->weakrefs)
    PyObject_ClearWeakRefs(obj);
  delete self->plan;
  self->plan = nullptr;
  Py_TYPE(obj)->tp_free(obj);
}

PyObject *launcher_new(PyTypeObject *type, PyObject *, PyObject *) {
  PyObject *obj = type->tp_alloc(type, 0);
  if (!obj)
    return nullptr;
  auto *self = reinterpret_cast<Launcher *>(obj);
  self->plan = new (std::nothrow) std::shared_ptr<Plan>();
  self->state = 0;
  self->weakrefs = nullptr;
  self->vectorcall = launcher_vectorcall;
  with_vectorcall(type, launcher_call, offsetof(Launcher, vectorcall));
  if (!self->plan) {
    Py_DECREF(obj);
    return PyErr_NoMemory();
  }
  return obj;
}

//===----------------------------------------------------------------------===//
// Reading a plan
//===----------------------------------------------------------------------===//

bool read_int_list(PyObject *seq, std::vector<int64_t> &out) {
  PyObject *fast = PySequence_Fast(seq, "expected a sequence of ints");
  if (!fast)
    return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  out.resize(n);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!as_i64(PySequence_Fast_GET_ITEM(fast, i), out[i])) {
      Py_DECREF(fast);
      return false;
    }
  Py_DECREF(fast);
  return true;
}

bool read_codes(PyObject *seq, std::vector<int32_t> &out) {
  std::vector<int64_t> v;
  if (!read_int_list(seq, v))
    return false;
  out.assign(v.begin(), v.end());
  return true;
}

bool read_bytes(PyObject *o, std::vector<uint8_t> &out) {
  out.clear();
  if (o == Py_None)
    return true;
  if (!PyBytes_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "expected bytes or None");
    return false;
  }
  auto *s = reinterpret_cast<const uint8_t *>(PyBytes_AS_STRING(o));
  out.assign(s, s + PyBytes_GET_SIZE(o));
  return true;
}

// A parameter: ("tensor", input, alloc, dims, torch dtypes, numpy dtypes,
// out torch dtype, out numpy dtype, torch poison, numpy poison, itemsize,
// numpy itemsize) or ("scalar", input, kind, bytes, lo, hi).
bool read_param(PyObject *t, Param &p) {
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 2) {
    PyErr_SetString(PyExc_TypeError, "malformed parameter spec");
    return false;
  }
  PyObject *kind = PyTuple_GET_ITEM(t, 0);
  p.tensor = PyUnicode_Check(kind) && PyUnicode_CompareWithASCIIString(kind, "tensor") == 0;
  int input = 0;
  if (p.tensor) {
    PyObject *alloc, *dims, *tdt, *ndt, *out_numpy, *tp, *np;
    long long itemsize, numpy_itemsize;
    int out_torch;
    if (!PyArg_ParseTuple(t, "OpOOOOiOOOLL", &kind, &input, &alloc, &dims, &tdt, &ndt,
                          &out_torch, &out_numpy, &tp, &np, &itemsize, &numpy_itemsize))
      return false;
    p.input = input;
    p.alloc = (int)PyLong_AsLong(alloc);
    p.out_torch = out_torch;
    p.itemsize = itemsize;
    p.numpy_itemsize = numpy_itemsize > 0 ? numpy_itemsize : 1;
    if (!read_int_list(dims, p.dims) || !read_codes(tdt, p.torch_dtypes) ||
        !read_codes(ndt, p.numpy_dtypes) || !read_bytes(tp, p.torch_poison) ||
        !read_bytes(np, p.numpy_poison))
      return false;
    if (out_numpy != Py_None) {
      Py_INCREF(out_numpy);
      p.out_numpy = out_numpy;
    }
    return !PyErr_Occurred();
  }
  unsigned long long hi;
  long long lo;
  if (!PyArg_ParseTuple(t, "OpiiLK", &kind, &input, &p.kind, &p.bytes, &lo, &hi))
    return false;
  p.input = input;
  p.lo = lo;
  p.hi = hi;
  return true;
}

// plan = (cuda, params, allocs, symbols, parts, cpu)
//   parts: ((grid programs x3, block x3, shared, map params), ...) (CUDA)
//   cpu: (entry address, guarded runner address or 0, flush) (CPU)
PyObject *launcher_configure(PyObject *obj, PyObject *spec) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  if (spec == Py_None) {
    self->plan->reset();
    self->state = 2;
    Py_RETURN_NONE;
  }
  PyObject *params, *allocs, *parts, *cpu;
  int cuda, symbols;
  if (!PyArg_ParseTuple(spec, "pOOiOO", &cuda, &params, &allocs, &symbols, &parts, &cpu))
    return nullptr;
  auto plan = std::make_unique<Plan>();
  plan->cuda = cuda;
  plan->symbols = symbols;
  PyObject *fast = PySequence_Fast(params, "params must be a sequence");
  if (!fast)
    return nullptr;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  plan->params.resize(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    Param &p = plan->params[i];
    if (!read_param(PySequence_Fast_GET_ITEM(fast, i), p)) {
      Py_DECREF(fast);
      return nullptr;
    }
    plan->inputs += p.input;
    plan->words += p.tensor ? 3 + 2 * p.dims.size() : 1;
    plan->shape_offset.push_back(plan->shape_room);
    plan->shape_room += 2 * p.dims.size();
    plan->returned += p.alloc == 1;
  }
  Py_DECREF(fast);
  std::vector<int64_t> order;
  if (!read_int_list(allocs, order))
    return nullptr;
  for (int64_t i : order) {
    if (i < 0 || i >= n || !plan->params[i].tensor || !plan->params[i].alloc) {
      PyErr_SetString(PyExc_ValueError, "allocs must name output or workspace tensors");
      return nullptr;
    }
    plan->allocs.push_back((int)i);
  }
  for (const Param &p : plan->params)
    for (int64_t d : p.dims)
      if (d < 0 && -(d + 1) >= symbols) {
        PyErr_SetString(PyExc_ValueError, "symbol index out of range");
        return nullptr;
      }
  if (cuda) {
    PyObject *pf = PySequence_Fast(parts, "parts must be a sequence");
    if (!pf)
      return nullptr;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(pf); ++k) {
      PyObject *g0, *g1, *g2, *maps;
      Part part;
      if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(pf, k), "(OOO)(III)IO", &g0, &g1, &g2,
                            &part.block[0], &part.block[1], &part.block[2], &part.shared,
                            &maps) ||
          !read_int_list(g0, part.grid[0]) || !read_int_list(g1, part.grid[1]) ||
          !read_int_list(g2, part.grid[2])) {
        Py_DECREF(pf);
        return nullptr;
      }
      std::vector<int64_t> mp;
      if (!read_int_list(maps, mp)) {
        Py_DECREF(pf);
        return nullptr;
      }
      for (int64_t m : mp) {
        if (m < 0 || m >= n || !plan->params[m].tensor) {
          Py_DECREF(pf);
          PyErr_SetString(PyExc_ValueError, "a tensor map must name a tensor parameter");
          return nullptr;
        }
        TensorMap map;
        map.param = (int)m;
        part.maps.push_back(std::move(map));
      }
      for (auto &g : part.grid)
        if (g.size() % 2 || g.empty()) {
          Py_DECREF(pf);
          PyErr_SetString(PyExc_ValueError, "malformed grid program");
          return nullptr;
        }
      plan->parts.push_back(std::move(part));
    }
    Py_DECREF(pf);
  } else {
    unsigned long long entry, guarded;
    int flush;
    if (!PyArg_ParseTuple(cpu, "KKp", &entry, &guarded, &flush))
      return nullptr;
    if (!entry) {
      PyErr_SetString(PyExc_ValueError, "a CPU plan needs its entry's address");
      return nullptr;
    }
    plan->entry = reinterpret_cast<void (*)(void *)>(entry);
    plan->guarded = reinterpret_cast<int (*)(void (*)(void *), void *, void *)>(guarded);
    plan->flush = flush;
  }
  *self->plan = std::shared_ptr<Plan>(plan.release());
  self->state = 1;
  Py_RETURN_NONE;
}

// A CUDA context the kernel's functions are loaded in: (context, device,
// multiprocessors, (function per part)).
PyObject *launcher_add_context(PyObject *obj, PyObject *args) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  unsigned long long ctx;
  int device;
  long long sms;
  PyObject *fns;
  if (!PyArg_ParseTuple(args, "KiLO", &ctx, &device, &sms, &fns))
    return nullptr;
  Plan *plan = self->plan->get();
  if (!plan || !plan->cuda)
    Py_RETURN_FALSE; // no plan to hold it (Kernel._native_prepare makes the plan first)
  std::vector<int64_t> handles;
  if (!read_int_list(fns, handles))
    return nullptr;
  if (handles.size() != plan->parts.size()) {
    PyErr_SetString(PyExc_ValueError, "one function per part");
    return nullptr;
  }
  auto c = std::make_shared<Context>();
  c->ctx = reinterpret_cast<void *>(ctx);
  c->device = device;
  c->sms = sms;
  for (int64_t h : handles)
    c->functions.push_back(reinterpret_cast<void *>(h));
  for (auto &known : plan->contexts)
    if (known->ctx == c->ctx) {
      known = c;
      Py_RETURN_TRUE;
    }
  plan->contexts.push_back(c);
  Py_RETURN_TRUE;
}

// Whether the current plan knows the CUDA context `handle`.
PyObject *launcher_has_context(PyObject *obj, PyObject *arg) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  uint64_t handle;
  if (!as_u64(arg, handle))
    return nullptr;
  Plan *plan = self->plan->get();
  if (plan)
    for (const auto &c : plan->contexts)
      if (reinterpret_cast<uintptr_t>(c->ctx) == handle)
        Py_RETURN_TRUE;
  Py_RETURN_FALSE;
}

PyObject *launcher_state(PyObject *obj, PyObject *) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  const char *names[] = {"unset", "native", "python"};
  return PyUnicode_FromString(names[self->state]);
}

PyObject *launcher_contexts(PyObject *obj, PyObject *) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  Plan *plan = self->plan->get();
  return PyLong_FromSize_t(plan ? plan->contexts.size() : 0);
}

// The fast path alone: the result, or NotImplemented where it does not take
// the call (what @tl.jit's cache tries before its own lookup).
PyObject *launcher_try(PyObject *obj, PyObject *const *args, Py_ssize_t nargs) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  if (!ensure_setup(self))
    return nullptr;
  PyObject *out;
  if (fast_call(self, args, nargs, &out))
    return out;
  Py_RETURN_NOTIMPLEMENTED;
}

//===----------------------------------------------------------------------===//
// Bound calls: the arguments checked and the outputs allocated once
//===----------------------------------------------------------------------===//

struct BoundCall {
  PyObject_HEAD PyObject *launcher; // for its error messages
  std::shared_ptr<Plan> *plan;      // the plan it was bound with
  PyObject *keep;                   // the arguments and outputs
  PyObject *outputs;                // what a call returns
  int cuda;
  void *ctx;
  int32_t device;
  // CUDA: one per part; CPU: one (each where it was made: the slots point
  // into its words).
  std::vector<std::unique_ptr<ParamBuffer>> *buffers;
  std::vector<LaunchConfig> *configs;
  std::vector<void *> *functions;
  std::vector<void *> *descriptors; // CPU
};

PyTypeObject BoundCallType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject *bound_vectorcall(PyObject *obj, PyObject *const *, size_t nargsf, PyObject *kwnames) {
  auto *self = reinterpret_cast<BoundCall *>(obj);
  if (PyVectorcall_NARGS(nargsf) || kwnames) {
    PyErr_SetString(PyExc_TypeError, "a bound kernel call takes no arguments");
    return nullptr;
  }
  Plan &plan = **self->plan;
  if (self->cuda) {
    void *ctx = nullptr;
    if (cuda_api.ctx_get_current(&ctx) || ctx != self->ctx) {
      PyErr_SetString(PyExc_RuntimeError, "the CUDA context changed since the kernel call was "
                                          "bound; bind it again");
      return nullptr;
    }
    void *stream = nullptr;
    if (!current_stream(self->device, stream)) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "torch's current CUDA stream is unknown");
      return nullptr;
    }
    for (size_t k = 0; k < self->buffers->size(); ++k) {
      LaunchConfig config = (*self->configs)[k];
      config.stream = stream;
      int code = cuda_api.launch_ex(&config, (*self->functions)[k], (*self->buffers)[k]->slots.data(),
                                    nullptr);
      if (code) {
        launch_failed(self->launcher, k, code, self->device, config.grid);
        return nullptr;
      }
    }
  } else if (!run_entry(self->launcher, plan, (*self->buffers)[0]->slots.data())) {
    return nullptr;
  }
  Py_INCREF(self->outputs);
  return self->outputs;
}

PyObject *bound_call(PyObject *obj, PyObject *args, PyObject *kwargs) {
  if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
    PyErr_SetString(PyExc_TypeError, "a bound kernel call takes no arguments");
    return nullptr;
  }
  return bound_vectorcall(obj, nullptr, 0, nullptr);
}

void bound_dealloc(PyObject *obj) {
  auto *self = reinterpret_cast<BoundCall *>(obj);
  Py_XDECREF(self->launcher);
  Py_XDECREF(self->keep);
  Py_XDECREF(self->outputs);
  delete self->plan;
  delete self->buffers;
  delete self->configs;
  delete self->functions;
  delete self->descriptors;
  Py_TYPE(obj)->tp_free(obj);
}

// Checks the arguments and allocates the outputs once; returns a callable
// that launches on them (torch's current stream at each call), or None
// where the fast path does not take them.
PyObject *launcher_bind(PyObject *obj, PyObject *const *args, Py_ssize_t nargs) {
  auto *self = reinterpret_cast<Launcher *>(obj);
  if (!ensure_setup(self))
    return nullptr;
  if (!native_enabled || self->state != 1)
    Py_RETURN_NONE;
  std::shared_ptr<Plan> shared = *self->plan;
  Plan &plan = *shared;
  std::shared_ptr<const Context> c;
  if (plan.cuda && !(c = current_context(plan)))
    Py_RETURN_NONE;
  Bound b(plan);
  int bound = bind(plan, args, nargs, c ? c->device : -1, b);
  if (bound < 0)
    return nullptr;
  if (bound == 0) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  auto *call = PyObject_New(BoundCall, &BoundCallType);
  if (!call)
    return nullptr;
  call->launcher = obj;
  Py_INCREF(obj);
  call->plan = new std::shared_ptr<Plan>(shared);
  call->keep = nullptr;
  call->outputs = nullptr;
  call->cuda = plan.cuda;
  call->ctx = c ? c->ctx : nullptr;
  call->device = c ? c->device : -1;
  call->buffers = new std::vector<std::unique_ptr<ParamBuffer>>();
  call->configs = new std::vector<LaunchConfig>();
  call->functions = new std::vector<void *>();
  call->descriptors = new std::vector<void *>(plan.params.size());
  PyObject *result = results(plan, b);
  PyObject *keep = PyTuple_New(nargs + (Py_ssize_t)b.outputs.size());
  if (!result || !keep) {
    Py_XDECREF(result);
    Py_XDECREF(keep);
    Py_DECREF(call);
    return nullptr;
  }
  call->outputs = result;
  call->keep = keep;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(keep, i, args[i]);
  }
  for (size_t j = 0; j < b.outputs.size(); ++j) {
    Py_INCREF(b.outputs[j]);
    PyTuple_SET_ITEM(keep, nargs + (Py_ssize_t)j, b.outputs[j]);
  }
  if (plan.cuda) {
    for (size_t k = 0; k < plan.parts.size(); ++k) {
      const Part &part = plan.parts[k];
      LaunchConfig config = {{1, 1, 1}, {part.block[0], part.block[1], part.block[2]},
                             part.shared, nullptr, nullptr, 0};
      int g = part_grid(part, b, c->sms, config.grid);
      if (g == 0) {
        Py_DECREF(call);
        Py_RETURN_NONE;
      }
      if (g == 2)
        continue;
      call->buffers->emplace_back(new ParamBuffer());
      ParamBuffer &buffer = *call->buffers->back();
      buffer.begin(plan, part);
      for (size_t m = 0; m < part.maps.size(); ++m)
        if (!tensor_map(obj, plan, k, m, b, buffer.map(m))) {
          Py_DECREF(call);
          return nullptr;
        }
      buffer.finish(plan, part, b);
      call->configs->push_back(config);
      call->functions->push_back(c->functions[k]);
    }
  } else {
    // One buffer: the words, the descriptor pointers and the slots.
    call->buffers->emplace_back(new ParamBuffer());
    ParamBuffer &buf = *call->buffers->back();
    buf.words.assign(plan.words + 1, 0);
    buf.slots.assign(plan.params.size(), nullptr);
    pack_cpu(plan, b, buf.words.data(), call->descriptors->data(), buf.slots.data());
  }
  return reinterpret_cast<PyObject *>(call);
}

//===----------------------------------------------------------------------===//
// @tl.jit's call cache
//===----------------------------------------------------------------------===//

// One entry: calls of `nargs` positional arguments whose compile-time
// arguments (at `const_pos`) equal `consts` (same type, equal value) and
// whose closure cells still hold `contents` run `launcher` on the arguments
// at `runtime_pos` (or, with no launcher... see JitCache).
struct JitEntry {
  Py_ssize_t nargs = 0;
  std::vector<Py_ssize_t> const_pos, runtime_pos;
  std::vector<PyObject *> consts; // owned
  std::vector<PyObject *> cells, contents; // owned
  PyObject *launcher = nullptr; // owned: a Kernel
  bool as_tuple = false;
  bool returns_kernel = false; // a factory's entry: the call returns the kernel
  void release() {
    for (PyObject *o : consts)
      Py_DECREF(o);
    for (PyObject *o : cells)
      Py_DECREF(o);
    for (PyObject *o : contents)
      Py_DECREF(o);
    Py_XDECREF(launcher);
  }
};

struct JitCache {
  PyObject_HEAD std::vector<JitEntry> *entries; // most recently used first
  Py_ssize_t capacity;
  PyObject *weakrefs;
  vectorcallfunc vectorcall; // jit_vectorcall
};

PyTypeObject JitCacheType = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool same_value(PyObject *a, PyObject *b) {
  if (a == b)
    return true;
  if (Py_TYPE(a) != Py_TYPE(b))
    return false;
  int eq = PyObject_RichCompareBool(a, b, Py_EQ);
  if (eq < 0) {
    PyErr_Clear();
    return false;
  }
  return eq == 1;
}

PyObject *jit_lookup(PyObject *obj, PyObject *const *args, Py_ssize_t nargs) {
  auto *self = reinterpret_cast<JitCache *>(obj);
  std::vector<JitEntry> &entries = *self->entries;
  for (size_t e = 0; e < entries.size(); ++e) {
    JitEntry &entry = entries[e];
    if (entry.nargs != nargs)
      continue;
    bool same = true;
    for (size_t i = 0; i < entry.const_pos.size() && same; ++i)
      same = same_value(args[entry.const_pos[i]], entry.consts[i]);
    for (size_t i = 0; i < entry.cells.size() && same; ++i)
      same = PyCell_GET(entry.cells[i]) == entry.contents[i];
    if (!same)
      continue;
    PyObject *out;
    if (entry.returns_kernel) {
      out = entry.launcher;
      Py_INCREF(out);
    } else {
      Scratch<PyObject *, 16> argv(entry.runtime_pos.size());
      for (size_t i = 0; i < entry.runtime_pos.size(); ++i)
        argv[i] = args[entry.runtime_pos[i]];
      auto *launcher = reinterpret_cast<Launcher *>(entry.launcher);
      Py_ssize_t n = (Py_ssize_t)entry.runtime_pos.size();
      if (!ensure_setup(launcher))
        return nullptr;
      if (!fast_call(launcher, argv.data, n, &out)) {
        // The Python path, where the arguments pass its checks (a context
        // the fast path has not seen, arguments it leaves to Python).
        PyObject *method = PyObject_GetAttrString(entry.launcher, "_try_python");
        if (!method)
          return nullptr;
        out = PyObject_Vectorcall(method, argv.data, n, nullptr);
        Py_DECREF(method);
        if (out == Py_NotImplemented) {
          Py_DECREF(out);
          continue;
        }
      }
      if (!out)
        return nullptr;
      // A single output of a function returning a tuple (several outputs
      // come as the kernel's list already, as on the first call).
      if (entry.as_tuple && !PyTuple_Check(out) && !PyList_Check(out)) {
        PyObject *t = PyTuple_Pack(1, out);
        Py_DECREF(out);
        out = t;
      }
    }
    if (e) { // most recently used first
      JitEntry hit = entry;
      entries.erase(entries.begin() + e);
      entries.insert(entries.begin(), hit);
    }
    return out;
  }
  Py_RETURN_NOTIMPLEMENTED;
}

bool read_positions(PyObject *seq, std::vector<Py_ssize_t> &out, Py_ssize_t nargs) {
  std::vector<int64_t> v;
  if (!read_int_list(seq, v))
    return false;
  for (int64_t p : v)
    if (p < 0 || p >= nargs) {
      PyErr_SetString(PyExc_ValueError, "argument position out of range");
      return false;
    }
  out.assign(v.begin(), v.end());
  return true;
}

bool read_objects(PyObject *seq, std::vector<PyObject *> &out) {
  PyObject *fast = PySequence_Fast(seq, "expected a sequence");
  if (!fast)
    return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
    Py_INCREF(o);
    out.push_back(o);
  }
  Py_DECREF(fast);
  return true;
}

// add(kernel, nargs, const_pos, consts, runtime_pos, cells, as_tuple, returns_kernel)
PyObject *jit_add(PyObject *obj, PyObject *args) {
  auto *self = reinterpret_cast<JitCache *>(obj);
  PyObject *kernel, *const_pos, *consts, *runtime_pos, *cells;
  Py_ssize_t nargs;
  int as_tuple, returns_kernel;
  if (!PyArg_ParseTuple(args, "OnOOOOpp", &kernel, &nargs, &const_pos, &consts, &runtime_pos,
                        &cells, &as_tuple, &returns_kernel))
    return nullptr;
  JitEntry entry;
  entry.nargs = nargs;
  entry.as_tuple = as_tuple;
  entry.returns_kernel = returns_kernel;
  bool ok = read_positions(const_pos, entry.const_pos, nargs) &&
            read_positions(runtime_pos, entry.runtime_pos, nargs) &&
            read_objects(consts, entry.consts) && read_objects(cells, entry.cells);
  if (ok && entry.consts.size() != entry.const_pos.size()) {
    PyErr_SetString(PyExc_ValueError, "one value per compile-time position");
    ok = false;
  }
  if (ok && !PyObject_TypeCheck(kernel, &LauncherType)) {
    PyErr_SetString(PyExc_TypeError, "a cache entry holds a kernel");
    ok = false;
  }
  for (PyObject *cell : entry.cells)
    if (ok && !PyCell_Check(cell)) {
      PyErr_SetString(PyExc_TypeError, "cells must be closure cells");
      ok = false;
    }
  if (!ok) {
    entry.release();
    return nullptr;
  }
  for (PyObject *cell : entry.cells) {
    PyObject *c = PyCell_GET(cell);
    Py_XINCREF(c);
    entry.contents.push_back(c);
  }
  Py_INCREF(kernel);
  entry.launcher = kernel;
  std::vector<JitEntry> &entries = *self->entries;
  // An entry of the same call replaces the one there.
  for (size_t e = 0; e < entries.size(); ++e) {
    JitEntry &old = entries[e];
    bool same = old.nargs == entry.nargs && old.const_pos == entry.const_pos &&
                old.runtime_pos == entry.runtime_pos && old.cells == entry.cells &&
                old.launcher == entry.launcher;
    for (size_t i = 0; same && i < old.consts.size(); ++i)
      same = same_value(old.consts[i], entry.consts[i]);
    if (same) {
      old.release();
      entries.erase(entries.begin() + e);
      break;
    }
  }
  entries.insert(entries.begin(), entry);
  while ((Py_ssize_t)entries.size() > self->capacity) {
    entries.back().release();
    entries.pop_back();
  }
  Py_RETURN_NONE;
}

PyObject *jit_clear(PyObject *obj, PyObject *) {
  auto *self = reinterpret_cast<JitCache *>(obj);
  for (JitEntry &e : *self->entries)
    e.release();
  self->entries->clear();
  Py_RETURN_NONE;
}

PyObject *jit_len(PyObject *obj, PyObject *) {
  return PyLong_FromSize_t(reinterpret_cast<JitCache *>(obj)->entries->size());
}

PyObject *jit_call(PyObject *obj, PyObject *args, PyObject *kwargs);

// A call of the jitted function: a call seen before goes straight to its
// kernel; any other (keywords too) to `_call_full`.
PyObject *jit_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) {
    PyObject *out = jit_lookup(obj, args, nargs);
    if (out != Py_NotImplemented)
      return out;
    Py_DECREF(out);
  }
  PyObject *method = PyObject_GetAttrString(obj, "_call_full");
  if (!method)
    return nullptr;
  PyObject *out = PyObject_Vectorcall(method, args, nargs, kwnames);
  Py_DECREF(method);
  return out;
}

// The base of @tl.jit's JITFunction: its arguments are the subclass's.
PyObject *jit_new(PyTypeObject *type, PyObject *, PyObject *) {
  PyObject *obj = type->tp_alloc(type, 0);
  if (!obj)
    return nullptr;
  auto *self = reinterpret_cast<JitCache *>(obj);
  self->entries = new (std::nothrow) std::vector<JitEntry>();
  self->capacity = 8;
  self->weakrefs = nullptr;
  self->vectorcall = jit_vectorcall;
  with_vectorcall(type, jit_call, offsetof(JitCache, vectorcall));
  if (!self->entries) {
    Py_DECREF(obj);
    return PyErr_NoMemory();
  }
  return obj;
}

// The same through an argument tuple.
PyObject *jit_call(PyObject *obj, PyObject *args, PyObject *kwargs) {
  if (!kwargs || PyDict_GET_SIZE(kwargs) == 0) {
    PyObject *out = jit_lookup(obj, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args));
    if (out != Py_NotImplemented)
      return out;
    Py_DECREF(out);
  }
  PyObject *method = PyObject_GetAttrString(obj, "_call_full");
  if (!method)
    return nullptr;
  PyObject *out = PyObject_Call(method, args, kwargs);
  Py_DECREF(method);
  return out;
}

void jit_dealloc(PyObject *obj) {
  auto *self = reinterpret_cast<JitCache *>(obj);
  if (self->weakrefs)
    PyObject_ClearWeakRefs(obj);
  if (self->entries) {
    for (JitEntry &e : *self->entries)
      e.release();
    delete self->entries;
  }
  Py_TYPE(obj)->tp_free(obj);
}

//===----------------------------------------------------------------------===//
// Module functions: set-up and probes
//===----------------------------------------------------------------------===//

template <typename F> bool read_fn(PyObject *dict, const char *key, F &out, bool required) {
  PyObject *v = PyDict_GetItemString(dict, key);
  if (!v) {
    if (required)
      PyErr_Format(PyExc_KeyError, "missing %s", key);
    out = nullptr;
    return !required;
  }
  uint64_t addr;
  if (!as_u64(v, addr))
    return false;
  out = reinterpret_cast<F>(addr);
  return addr != 0 || !required;
}

// configure_torch(functions: dict of addresses, tensor type, Parameter type,
// probe tensor, its TensorImpl address (`_cdata`), enum values dict) -> the
// offset of the at::Tensor found in the probe, or None.
PyObject *configure_torch(PyObject *, PyObject *args) {
  PyObject *fns, *tensor, *parameter, *probe, *enums, *raw_stream;
  unsigned long long impl;
  if (!PyArg_ParseTuple(args, "OOOOKOO", &fns, &tensor, &parameter, &probe, &impl, &enums,
                        &raw_stream))
    return nullptr;
  if (!PyDict_Check(fns) || !PyType_Check(tensor) || !PyType_Check(parameter) ||
      !PyDict_Check(enums)) {
    PyErr_SetString(PyExc_TypeError, "configure_torch: bad arguments");
    return nullptr;
  }
  TorchApi api;
  if (!read_fn(fns, "aoti_torch_get_dtype", api.dtype, true) ||
      !read_fn(fns, "aoti_torch_get_device_type", api.device_type, true) ||
      !read_fn(fns, "aoti_torch_get_device_index", api.device_index, true) ||
      !read_fn(fns, "aoti_torch_get_layout", api.layout, false) ||
      !read_fn(fns, "aoti_torch_get_dim", api.dim, true) ||
      !read_fn(fns, "aoti_torch_get_sizes", api.sizes, true) ||
      !read_fn(fns, "aoti_torch_get_strides", api.strides, true) ||
      !read_fn(fns, "aoti_torch_get_data_ptr", api.data_ptr, true) ||
      !read_fn(fns, "aoti_torch_is_contiguous", api.contiguous, false) ||
      !read_fn(fns, "aoti_torch_empty_strided", api.empty_strided, true) ||
      !read_fn(fns, "aoti_torch_delete_tensor_object", api.destroy, true) ||
      !read_fn(fns, "THPVariable_Wrap", api.wrap, true) ||
      !read_fn(fns, "aoti_torch_get_current_cuda_stream", api.cuda_stream, false))
    return nullptr;
  PyObject *v;
  if ((v = PyDict_GetItemString(enums, "cpu")))
    api.cpu = (int32_t)PyLong_AsLong(v);
  if ((v = PyDict_GetItemString(enums, "cuda")))
    api.cuda = (int32_t)PyLong_AsLong(v);
  if ((v = PyDict_GetItemString(enums, "strided")))
    api.strided = (int32_t)PyLong_AsLong(v);
  if (PyErr_Occurred())
    return nullptr;
  // The at::Tensor of a THPVariable follows PyObject_HEAD (torch >= 2.9:
  // `at::Tensor cdata`), or a flag before it (`c10::MaybeOwned<at::Tensor>`,
  // whose owned and borrowed forms both hold the TensorImpl pointer there).
  Py_ssize_t offset = -1;
  for (Py_ssize_t off : {(Py_ssize_t)sizeof(PyObject), (Py_ssize_t)sizeof(PyObject) + 8}) {
    void *got;
    memcpy(&got, reinterpret_cast<char *>(probe) + off, sizeof got);
    if (reinterpret_cast<uintptr_t>(got) == impl) {
      offset = off;
      break;
    }
  }
  if (offset < 0)
    Py_RETURN_NONE;
  api.offset = offset;
  api.tensor = reinterpret_cast<PyTypeObject *>(tensor);
  api.parameter = reinterpret_cast<PyTypeObject *>(parameter);
  Py_INCREF(tensor);
  Py_INCREF(parameter);
  if (raw_stream != Py_None) {
    Py_INCREF(raw_stream);
    api.raw_stream = raw_stream;
  }
  torch_api = api;
  // Enabled by enable("torch") once the probes agree.
  torch_api.enabled = false;
  return PyLong_FromSsize_t(offset);
}

// tensor_info(t) -> (dtype, device type, device index, layout, sizes,
// strides, data pointer, contiguous), read the way calls read it.
PyObject *tensor_info(PyObject *, PyObject *x) {
  if (!torch_api.dtype || !PyObject_TypeCheck(x, torch_api.tensor)) {
    PyErr_SetString(PyExc_TypeError, "tensor_info: torch is not configured, or not a tensor");
    return nullptr;
  }
  Handle h = reinterpret_cast<char *>(x) + torch_api.offset;
  int32_t dtype, type, index, layout = torch_api.strided;
  int64_t dim, *sizes, *strides;
  void *ptr;
  bool contiguous;
  if (torch_api.dtype(h, &dtype) || torch_api.device_type(h, &type) ||
      torch_api.device_index(h, &index) ||
      (torch_api.layout && torch_api.layout(h, &layout)) || torch_api.dim(h, &dim) ||
      torch_api.sizes(h, &sizes) || torch_api.strides(h, &strides) ||
      torch_api.data_ptr(h, &ptr)) {
    PyErr_SetString(PyExc_RuntimeError, "tensor_info: a torch shim call failed");
    return nullptr;
  }
  if (!torch_api.contiguous || torch_api.contiguous(h, &contiguous))
    contiguous = row_major(dim, sizes, strides);
  PyObject *s = PyTuple_New(dim), *st = PyTuple_New(dim);
  for (int64_t i = 0; i < dim; ++i) {
    PyTuple_SET_ITEM(s, i, PyLong_FromLongLong(sizes[i]));
    PyTuple_SET_ITEM(st, i, PyLong_FromLongLong(strides[i]));
  }
  return Py_BuildValue("iiiiNNKO", dtype, type, index, layout, s, st,
                       (unsigned long long)reinterpret_cast<uintptr_t>(ptr),
                       contiguous ? Py_True : Py_False);
}

// empty_tensor(sizes, dtype code, device type, device index): a tensor
// allocated the way outputs are.
PyObject *empty_tensor(PyObject *, PyObject *args) {
  PyObject *sizes;
  int dtype, type, index;
  if (!PyArg_ParseTuple(args, "Oiii", &sizes, &dtype, &type, &index))
    return nullptr;
  if (!torch_api.empty_strided) {
    PyErr_SetString(PyExc_RuntimeError, "torch is not configured");
    return nullptr;
  }
  std::vector<int64_t> s;
  if (!read_int_list(sizes, s))
    return nullptr;
  std::vector<int64_t> st(s.size());
  int64_t count = 1;
  for (size_t d = s.size(); d-- > 0;) {
    st[d] = count;
    count *= s[d];
  }
  Param p;
  p.out_torch = dtype;
  PyObject *out = allocate_torch(p, (int64_t)s.size(), s.data(), st.data(), type, index);
  if (!out && !PyErr_Occurred())
    PyErr_SetString(PyExc_RuntimeError, "aoti_torch_empty_strided failed");
  return out;
}

// configure_numpy(ndarray type, numpy.empty): the fast path reads arrays
// once enable("numpy") is called (after the probes agree).
PyObject *configure_numpy(PyObject *, PyObject *args) {
  PyObject *ndarray, *empty;
  if (!PyArg_ParseTuple(args, "OO", &ndarray, &empty))
    return nullptr;
  if (!PyType_Check(ndarray)) {
    PyErr_SetString(PyExc_TypeError, "configure_numpy: not a type");
    return nullptr;
  }
  Py_INCREF(ndarray);
  Py_INCREF(empty);
  numpy_api.ndarray = reinterpret_cast<PyTypeObject *>(ndarray);
  numpy_api.empty = empty;
  numpy_api.enabled = false;
  Py_RETURN_NONE;
}

// array_info(a) -> (type number, byte order, sizes, strides in bytes, data
// pointer, C-contiguous).
PyObject *array_info(PyObject *, PyObject *x) {
  if (!numpy_api.ndarray || Py_TYPE(x) != numpy_api.ndarray) {
    PyErr_SetString(PyExc_TypeError, "array_info: numpy is not configured, or not an ndarray");
    return nullptr;
  }
  auto *a = reinterpret_cast<NumpyArray *>(x);
  auto *d = reinterpret_cast<NumpyDescr *>(a->descr);
  PyObject *s = PyTuple_New(a->nd), *st = PyTuple_New(a->nd);
  for (int i = 0; i < a->nd; ++i) {
    PyTuple_SET_ITEM(s, i, PyLong_FromLongLong(a->dimensions[i]));
    PyTuple_SET_ITEM(st, i, PyLong_FromLongLong(a->strides[i]));
  }
  return Py_BuildValue("iCNNKO", d->type_num, (int)(unsigned char)d->byteorder, s, st,
                       (unsigned long long)reinterpret_cast<uintptr_t>(a->data),
                       (a->flags & kNumpyCContiguous) ? Py_True : Py_False);
}

PyObject *configure_cuda(PyObject *, PyObject *fns) {
  if (!PyDict_Check(fns)) {
    PyErr_SetString(PyExc_TypeError, "configure_cuda: expected a dict");
    return nullptr;
  }
  CudaApi api;
  if (!read_fn(fns, "cuCtxGetCurrent", api.ctx_get_current, true) ||
      !read_fn(fns, "cuLaunchKernelEx", api.launch_ex, true))
    return nullptr;
  api.enabled = true;
  cuda_api = api;
  Py_RETURN_NONE;
}

// enable(what, on): "torch", "numpy" (after their probes) or "native" (every
// launcher; off sends every call down the Python path).
PyObject *enable(PyObject *, PyObject *args) {
  const char *what;
  int on;
  if (!PyArg_ParseTuple(args, "sp", &what, &on))
    return nullptr;
  bool *flag = nullptr;
  bool ready = true;
  if (!strcmp(what, "torch")) {
    flag = &torch_api.enabled;
    ready = torch_api.dtype && torch_api.tensor;
  } else if (!strcmp(what, "numpy")) {
    flag = &numpy_api.enabled;
    ready = numpy_api.ndarray != nullptr;
  } else if (!strcmp(what, "native")) {
    flag = &native_enabled;
  } else if (!strcmp(what, "tilelang_outputs")) {
    flag = &tilelang_outputs;
  } else if (!strcmp(what, "cuda")) {
    flag = &cuda_api.enabled;
    ready = cuda_api.launch_ex != nullptr;
  } else {
    PyErr_Format(PyExc_ValueError, "enable: unknown %s", what);
    return nullptr;
  }
  if (on && !ready) {
    PyErr_Format(PyExc_RuntimeError, "enable(%s): not configured", what);
    return nullptr;
  }
  bool was = *flag;
  *flag = on;
  return PyBool_FromLong(was);
}

PyMethodDef launcher_methods[] = {
    {"_native_configure", launcher_configure, METH_O,
     "Sets the plan of this kernel's fast path (None: the Python path only)."},
    {"_native_add_context", launcher_add_context, METH_VARARGS,
     "Registers a CUDA context the kernel's functions are loaded in with the current plan; "
     "False where there is no CUDA plan to hold it."},
    {"_native_has_context", launcher_has_context, METH_O,
     "Whether the current plan knows this CUDA context."},
    {"_native_state", launcher_state, METH_NOARGS,
     "'unset', 'native' (the fast path serves) or 'python'."},
    {"_native_contexts", launcher_contexts, METH_NOARGS,
     "How many CUDA contexts the fast path knows."},
    {"_native_try", (PyCFunction)(void (*)(void))launcher_try, METH_FASTCALL,
     "The fast path alone: the result, or NotImplemented."},
    {"_native_bind", (PyCFunction)(void (*)(void))launcher_bind, METH_FASTCALL,
     "A callable launching on these arguments (checked and allocated now), or None."},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef jit_methods[] = {
    {"_calls_add", jit_add, METH_VARARGS, "Adds an entry (most recently used first)."},
    {"_calls_lookup", (PyCFunction)(void (*)(void))jit_lookup, METH_FASTCALL,
     "The call's result, or NotImplemented."},
    {"_calls_clear", jit_clear, METH_NOARGS, "Drops every entry."},
    {"_calls_size", jit_len, METH_NOARGS, "The number of entries."},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef module_methods[] = {
    {"configure_torch", configure_torch, METH_VARARGS, nullptr},
    {"configure_numpy", configure_numpy, METH_VARARGS, nullptr},
    {"configure_cuda", configure_cuda, METH_O, nullptr},
    {"tensor_info", tensor_info, METH_O, nullptr},
    {"array_info", array_info, METH_O, nullptr},
    {"empty_tensor", empty_tensor, METH_VARARGS, nullptr},
    {"enable", enable, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_launch",
                          "The native launcher of compiled kernels (runtime/launch.cpp).", -1,
                          module_methods};

} // namespace

PyMODINIT_FUNC PyInit__launch(void) {
  LauncherType.tp_name = "tilelang_mlir.runtime._launch.Launcher";
  LauncherType.tp_basicsize = sizeof(Launcher);
  LauncherType.tp_dealloc = launcher_dealloc;
  LauncherType.tp_call = launcher_call;
  LauncherType.tp_vectorcall_offset = offsetof(Launcher, vectorcall);
  LauncherType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL;
  LauncherType.tp_doc = "The native fast path of a kernel call (the base of Kernel).";
  LauncherType.tp_methods = launcher_methods;
  LauncherType.tp_new = launcher_new;
  LauncherType.tp_weaklistoffset = offsetof(Launcher, weakrefs);
  if (PyType_Ready(&LauncherType) < 0)
    return nullptr;

  BoundCallType.tp_name = "tilelang_mlir.runtime._launch.BoundCall";
  BoundCallType.tp_basicsize = sizeof(BoundCall);
  BoundCallType.tp_dealloc = bound_dealloc;
  BoundCallType.tp_call = bound_call;
  BoundCallType.tp_flags = Py_TPFLAGS_DEFAULT;
  BoundCallType.tp_doc = "A kernel call with its arguments bound: calling it launches.";
  if (PyType_Ready(&BoundCallType) < 0)
    return nullptr;

  JitCacheType.tp_name = "tilelang_mlir.runtime._launch.JitCache";
  JitCacheType.tp_basicsize = sizeof(JitCache);
  JitCacheType.tp_dealloc = jit_dealloc;
  JitCacheType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL;
  JitCacheType.tp_call = jit_call;
  JitCacheType.tp_vectorcall_offset = offsetof(JitCache, vectorcall);
  JitCacheType.tp_weaklistoffset = offsetof(JitCache, weakrefs);
  JitCacheType.tp_doc = "@tl.jit's cache of calls by argument signature (the base of "
                        "JITFunction).";
  JitCacheType.tp_methods = jit_methods;
  JitCacheType.tp_new = jit_new;
  if (PyType_Ready(&JitCacheType) < 0)
    return nullptr;

  str_call_python = PyUnicode_InternFromString("_call_python");
  str_native_setup = PyUnicode_InternFromString("_native_setup");
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return nullptr;
  Py_INCREF(&LauncherType);
  PyModule_AddObject(m, "Launcher", reinterpret_cast<PyObject *>(&LauncherType));
  Py_INCREF(&BoundCallType);
  PyModule_AddObject(m, "BoundCall", reinterpret_cast<PyObject *>(&BoundCallType));
  Py_INCREF(&JitCacheType);
  PyModule_AddObject(m, "JitCache", reinterpret_cast<PyObject *>(&JitCacheType));
  return m;
}
