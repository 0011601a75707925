#include "bench_device.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>

#if WEAVE_BENCH_CUDA
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace bench {

namespace {

[[noreturn]] void no_cuda() {
  throw std::runtime_error("this weave-bench was built without CUDA; use --backend host");
}

#if WEAVE_BENCH_CUDA
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}
// Complex collectives move (real, imaginary) pairs of the component type.
ncclDataType_t nccl_type(weave_dtype_t t) {
  switch (component_type(t)) {
    case WEAVE_FLOAT32: return ncclFloat32;
    case WEAVE_FLOAT64: return ncclFloat64;
    case WEAVE_FLOAT16: return ncclFloat16;
    case WEAVE_BFLOAT16: return ncclBfloat16;
    case WEAVE_FLOAT8_E4M3:
    case WEAVE_FLOAT8_E5M2: return ncclUint8;  // gathered as bytes, never summed
  }
  return ncclFloat32;
}
#endif

MPI_Datatype mpi_type(weave_dtype_t t) {
  if (t == WEAVE_FLOAT32) return MPI_FLOAT;
  if (t == WEAVE_FLOAT64) return MPI_DOUBLE;
  if (t == WEAVE_FLOAT8_E4M3 || t == WEAVE_FLOAT8_E5M2) return MPI_BYTE;  // gathered, never summed
  if (t == WEAVE_COMPLEX64) return MPI_C_FLOAT_COMPLEX;
  if (t == WEAVE_COMPLEX128) return MPI_C_DOUBLE_COMPLEX;
  throw std::runtime_error("MPI collectives in weave-bench take f32, f64, c64, c128 or FP8 bytes");
}

uint16_t to_bfloat16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t to_half(float x) {  // for values in [-1, 1): normal or zero halves
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint32_t sign = (bits >> 16) & 0x8000;
  const int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
  if (exponent <= 0) return static_cast<uint16_t>(sign);
  const uint32_t mantissa = (bits >> 13) & 0x3FF;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | mantissa);
}

float from_bfloat16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

float from_half(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const uint32_t mantissa = h & 0x3FFu;
  float x = 0.0f;
  if (exponent == 0x1F)
    x = mantissa ? std::nanf("") : INFINITY;
  else if (exponent == 0)
    x = std::ldexp(static_cast<float>(mantissa), -24);
  else
    x = std::ldexp(static_cast<float>(mantissa | 0x400u), exponent - 25);
  return (h & 0x8000u) ? -x : x;
}

}  // namespace

weave_dtype_t component_type(weave_dtype_t t) {
  return t == WEAVE_COMPLEX128 ? WEAVE_FLOAT64 : t == WEAVE_COMPLEX64 ? WEAVE_FLOAT32 : t;
}

int components(weave_dtype_t t) { return t == WEAVE_COMPLEX128 || t == WEAVE_COMPLEX64 ? 2 : 1; }

std::size_t element_size(weave_dtype_t t) { return weave_dtype_size(t); }

void select_device(bool device) {
  if (!device) return;
#if WEAVE_BENCH_CUDA
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0, count = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count == 0) throw std::runtime_error("no CUDA device");
  cuda_check(cudaSetDevice(local % count), "cudaSetDevice");
#else
  no_cuda();
#endif
}

std::string device_description(bool device) {
  if (!device) {
    return std::to_string(std::thread::hardware_concurrency()) + " host threads";
  }
#if WEAVE_BENCH_CUDA
  int d = 0;
  cudaDeviceProp p{};
  cudaGetDevice(&d);
  cudaGetDeviceProperties(&p, d);
  return std::string(p.name) + ", " + std::to_string(p.multiProcessorCount) + " SMs";
#else
  no_cuda();
#endif
}

Buffer::Buffer(int64_t bytes, bool device) : bytes_(bytes), device_(device) {
  const std::size_t size = static_cast<std::size_t>(std::max<int64_t>(bytes, 256));
  if (device) {
#if WEAVE_BENCH_CUDA
    cuda_check(cudaMalloc(&data_, size), "cudaMalloc");
#else
    no_cuda();
#endif
  } else {
    data_ = ::operator new(size, std::align_val_t(64));
  }
}

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    bytes_ = other.bytes_;
    device_ = other.device_;
    other.data_ = nullptr;
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (!data_) return;
#if WEAVE_BENCH_CUDA
  if (device_) cudaFree(data_);
#endif
  if (!device_) ::operator delete(data_, std::align_val_t(64));
  data_ = nullptr;
}

void fill_random(Buffer& buffer, weave_dtype_t t, uint64_t seed) {
  t = component_type(t);  // complex: both parts random
  const std::size_t size = weave_dtype_size(t);
  const int64_t count = buffer.bytes() / static_cast<int64_t>(size);
  std::vector<unsigned char> host(static_cast<std::size_t>(std::max<int64_t>(buffer.bytes(), 0)));
  // Several threads, each its own stream of numbers: gigabytes in seconds.
  const int threads = static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&, w] {
      std::mt19937_64 rng(seed * 1315423911ULL + static_cast<uint64_t>(w));
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      const int64_t begin = count * w / threads, end = count * (w + 1) / threads;
      for (int64_t i = begin; i < end; ++i) {
        float x = u(rng);
        if (x == 0.0f) x = 0.5f;
        unsigned char* out = host.data() + i * static_cast<int64_t>(size);
        if (t == WEAVE_FLOAT8_E4M3 || t == WEAVE_FLOAT8_E5M2) {
          // Sign, an exponent for 2^-3 .. 2^4 and any mantissa: finite, never zero.
          const unsigned bits = static_cast<unsigned>(rng());
          const bool e4m3 = t == WEAVE_FLOAT8_E4M3;
          const unsigned exponent = (e4m3 ? 4u : 12u) + bits % 8u, mantissa = (bits >> 3) & (e4m3 ? 7u : 3u);
          *out = static_cast<unsigned char>(((bits >> 8) & 0x80u) | (exponent << (e4m3 ? 3 : 2)) | mantissa);
        } else if (t == WEAVE_FLOAT64) {
          const double d = x;
          std::memcpy(out, &d, 8);
        } else if (t == WEAVE_FLOAT32) {
          std::memcpy(out, &x, 4);
        } else {
          const uint16_t h = t == WEAVE_BFLOAT16 ? to_bfloat16(x) : to_half(x);
          std::memcpy(out, &h, 2);
        }
      }
    });
  for (std::thread& w : workers) w.join();
  if (buffer.device()) {
#if WEAVE_BENCH_CUDA
    cuda_check(cudaMemcpy(buffer.data(), host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
#endif
  } else if (!host.empty()) {
    std::memcpy(buffer.data(), host.data(), host.size());
  }
}

void fill_scales(Buffer& buffer, uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(std::max<int64_t>(buffer.bytes(), 0) / 4));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  for (float& x : host) x = u(rng);
  if (buffer.device()) {
#if WEAVE_BENCH_CUDA
    cuda_check(cudaMemcpy(buffer.data(), host.data(), host.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
#endif
  } else if (!host.empty()) {
    std::memcpy(buffer.data(), host.data(), host.size() * 4);
  }
}

void poison(Buffer& buffer) {
  if (buffer.bytes() <= 0) return;
  if (buffer.device()) {
#if WEAVE_BENCH_CUDA
    cuda_check(cudaMemset(buffer.data(), 0xFF, static_cast<std::size_t>(buffer.bytes())), "cudaMemset");
#else
    no_cuda();
#endif
  } else {
    std::memset(buffer.data(), 0xFF, static_cast<std::size_t>(buffer.bytes()));
  }
}

std::vector<double> read_values(const Buffer& buffer, weave_dtype_t t) {
  const weave_dtype_t part = component_type(t);
  const std::size_t size = element_size(part);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(std::max<int64_t>(buffer.bytes(), 0)));
  if (buffer.device()) {
#if WEAVE_BENCH_CUDA
    cuda_check(cudaMemcpy(bytes.data(), buffer.data(), bytes.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
#else
    no_cuda();
#endif
  } else if (!bytes.empty()) {
    std::memcpy(bytes.data(), buffer.data(), bytes.size());
  }
  std::vector<double> values(bytes.size() / size);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const unsigned char* in = bytes.data() + i * size;
    if (part == WEAVE_FLOAT64) {
      std::memcpy(&values[i], in, 8);
    } else if (part == WEAVE_FLOAT32) {
      float x;
      std::memcpy(&x, in, 4);
      values[i] = x;
    } else {
      uint16_t h;
      std::memcpy(&h, in, 2);
      values[i] = part == WEAVE_BFLOAT16 ? from_bfloat16(h) : from_half(h);
    }
  }
  return values;
}

double relative_difference(const Buffer& got, const Buffer& want, weave_dtype_t t, MPI_Comm comm) {
  const std::vector<double> g = read_values(got, t), w = read_values(want, t);
  if (g.size() != w.size()) throw std::runtime_error("relative_difference: buffers of different sizes");
  double sums[2] = {0, 0}, total[2] = {0, 0};
  for (std::size_t i = 0; i < g.size(); ++i) {
    sums[0] += (g[i] - w[i]) * (g[i] - w[i]);  // NaN propagates
    sums[1] += w[i] * w[i];
  }
  MPI_Allreduce(sums, total, 2, MPI_DOUBLE, MPI_SUM, comm);
  return std::sqrt(total[0] / total[1]);
}

Timer::Timer(bool device) : device_(device) {
#if WEAVE_BENCH_CUDA
  if (device) {
    cudaStream_t s;
    cudaEvent_t a, b;
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreate(&a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b), "cudaEventCreate");
    stream_ = s;
    start_event_ = a;
    stop_event_ = b;
  }
#else
  if (device) no_cuda();
#endif
}

Timer::~Timer() {
#if WEAVE_BENCH_CUDA
  if (device_) {
    cudaEventDestroy(static_cast<cudaEvent_t>(start_event_));
    cudaEventDestroy(static_cast<cudaEvent_t>(stop_event_));
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }
#endif
}

void Timer::synchronize() {
#if WEAVE_BENCH_CUDA
  if (device_) cuda_check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
#endif
}

void Timer::start() {
#if WEAVE_BENCH_CUDA
  if (device_) {
    cuda_check(cudaEventRecord(static_cast<cudaEvent_t>(start_event_), static_cast<cudaStream_t>(stream_)),
               "cudaEventRecord");
    return;
  }
#endif
  host_start_ = MPI_Wtime();
}

double Timer::stop_ms() {
#if WEAVE_BENCH_CUDA
  if (device_) {
    float ms = 0;
    cuda_check(cudaEventRecord(static_cast<cudaEvent_t>(stop_event_), static_cast<cudaStream_t>(stream_)),
               "cudaEventRecord");
    cuda_check(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_event_)), "cudaEventSynchronize");
    cuda_check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_event_), static_cast<cudaEvent_t>(stop_event_)),
               "cudaEventElapsedTime");
    return ms;
  }
#endif
  return (MPI_Wtime() - host_start_) * 1e3;
}

std::vector<double> measure_in_turn(int warmup, int iterations, Timer& timer,
                                    const std::vector<std::function<void()>>& bodies) {
  std::vector<std::vector<double>> samples(bodies.size());
  const int n = static_cast<int>(bodies.size());
  for (int it = -warmup; it < iterations; ++it)
    for (int turn = 0; turn < n; ++turn) {
      // Iteration it starts one body later than the one before, so every
      // body follows every other equally often (see the header).
      const std::size_t b = static_cast<std::size_t>(((turn + it) % n + n) % n);
      timer.synchronize();
      MPI_Barrier(MPI_COMM_WORLD);
      timer.start();
      bodies[b]();
      double ms = timer.stop_ms(), slowest = 0;
      MPI_Allreduce(&ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (it >= 0) samples[b].push_back(slowest);
    }
  std::vector<double> medians;
  for (std::vector<double>& s : samples) {
    std::sort(s.begin(), s.end());
    medians.push_back(s.empty() ? 0.0 : s[s.size() / 2]);
  }
  return medians;
}

Communicator::Communicator(MPI_Comm comm, bool device) : comm_(comm), device_(device) {
#if WEAVE_BENCH_CUDA
  if (device) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ncclUniqueId id;
    if (rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
    ncclComm_t c;
    nccl_check(ncclCommInitRank(&c, size, id, rank), "ncclCommInitRank");
    nccl_ = c;
  }
#endif
}

Communicator::~Communicator() {
#if WEAVE_BENCH_CUDA
  if (nccl_) ncclCommDestroy(static_cast<ncclComm_t>(nccl_));
#endif
}

void Communicator::prepare(const Collective& c) {
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  int64_t total = 0;
  for (int64_t n : c.counts) total += n;
  const int64_t mine = c.kind == Collective::AllReduce ? total : c.counts.at(rank);
  const int64_t size = static_cast<int64_t>(weave_dtype_size(c.dtype));
  send_ = Buffer((c.kind == Collective::AllGather ? mine : total) * size, device_);
  recv_ = Buffer((c.kind == Collective::ReduceScatter ? mine : total) * size, device_);
  fill_random(send_, c.dtype, 77 + rank);
}

void Communicator::run(const Collective& c, void* stream) {
  if (device_ && components(c.dtype) == 2) {  // NCCL has no complex types: move the pairs' parts
    Collective parts = c;
    parts.dtype = component_type(c.dtype);
    for (int64_t& n : parts.counts) n *= 2;
    run(parts, stream);
    return;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  const bool equal = std::all_of(c.counts.begin(), c.counts.end(), [&](int64_t n) { return n == c.counts[0]; });
  const int64_t esize = static_cast<int64_t>(weave_dtype_size(c.dtype));
  std::vector<int64_t> offsets(c.counts.size(), 0);
  for (std::size_t i = 1; i < c.counts.size(); ++i) offsets[i] = offsets[i - 1] + c.counts[i - 1];
  if (!device_) {
    std::vector<int> counts(c.counts.begin(), c.counts.end()), displs(offsets.begin(), offsets.end());
    const MPI_Datatype t = mpi_type(c.dtype);
    switch (c.kind) {
      case Collective::AllGather:
        MPI_Allgatherv(send_.data(), counts[rank], t, recv_.data(), counts.data(), displs.data(), t, comm_);
        break;
      case Collective::ReduceScatter:
        MPI_Reduce_scatter(send_.data(), recv_.data(), counts.data(), t, MPI_SUM, comm_);
        break;
      case Collective::AllReduce:
        MPI_Allreduce(send_.data(), recv_.data(), static_cast<int>(c.counts[0]), t, MPI_SUM, comm_);
        break;
    }
    return;
  }
#if WEAVE_BENCH_CUDA
  ncclComm_t comm = static_cast<ncclComm_t>(nccl_);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const ncclDataType_t t = nccl_type(c.dtype);
  char* send = static_cast<char*>(send_.data());
  char* recv = static_cast<char*>(recv_.data());
  switch (c.kind) {
    case Collective::AllGather:
      if (equal) {
        nccl_check(ncclAllGather(send, recv, c.counts[0], t, comm, s), "ncclAllGather");
      } else {
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int q = 0; q < size; ++q) {
          nccl_check(ncclSend(send, c.counts[rank], t, q, comm, s), "ncclSend");
          nccl_check(ncclRecv(recv + offsets[q] * esize, c.counts[q], t, q, comm, s), "ncclRecv");
        }
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
      }
      break;
    case Collective::ReduceScatter:
      if (equal) {
        nccl_check(ncclReduceScatter(send, recv, c.counts[0], t, ncclSum, comm, s), "ncclReduceScatter");
      } else {
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int q = 0; q < size; ++q)
          nccl_check(ncclReduce(send + offsets[q] * esize, recv, c.counts[q], t, ncclSum, q, comm, s), "ncclReduce");
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
      }
      break;
    case Collective::AllReduce:
      nccl_check(ncclAllReduce(send, recv, c.counts[0], t, ncclSum, comm, s), "ncclAllReduce");
      break;
  }
#else
  (void)stream;
  (void)equal;
  (void)esize;
  no_cuda();
#endif
}

}  // namespace bench
