// What weave-bench needs from the machine, host or CUDA: buffers of random
// data, a timer, and the communication-alone collectives (MPI or NCCL).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weave/weave.h"

namespace bench {

std::size_t element_size(weave_dtype_t t);
// The real type of a complex type's parts (the type itself for real types)
// and how many parts an element has.
weave_dtype_t component_type(weave_dtype_t t);
int components(weave_dtype_t t);

// Picks this rank's GPU (local rank modulo the devices on the node) when
// `device`; throws if there is none.
void select_device(bool device);
std::string device_description(bool device);

// Host or device memory, freed on destruction.
class Buffer {
 public:
  Buffer() = default;
  Buffer(int64_t bytes, bool device);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  bool device() const { return device_; }

 private:
  void release();
  void* data_ = nullptr;
  int64_t bytes_ = 0;
  bool device_ = false;
};

// Uniform values in [-1, 1) of the given type (never zeros); FP8: random
// finite e4m3 or e5m2 values from 2^-3 to 2^4, either sign.
void fill_random(Buffer& buffer, weave_dtype_t t, uint64_t seed);
// Scales (float32): uniform in [0.5, 1.5).
void fill_scales(Buffer& buffer, uint64_t seed);

// All bytes 0xFF: NaN in every floating-point type, so that a result nobody
// wrote cannot pass a comparison.
void poison(Buffer& buffer);

// Every value of the buffer (each part of a complex one) as a double.
std::vector<double> read_values(const Buffer& buffer, weave_dtype_t t);

// ||got - want||_F / ||want||_F over the ranks of `comm` (each passing its
// own blocks); NaN anywhere makes it NaN.
double relative_difference(const Buffer& got, const Buffer& want, weave_dtype_t t, MPI_Comm comm);

// Wall clock on the host; CUDA events on one stream for device work.
class Timer {
 public:
  explicit Timer(bool device);
  ~Timer();
  void* stream() const { return stream_; }  // cudaStream_t, or null on the host
  void synchronize();
  void start();
  double stop_ms();

 private:
  bool device_;
  void* stream_ = nullptr;
  void* start_event_ = nullptr;
  void* stop_event_ = nullptr;
  double host_start_ = 0;
};

// Medians over `iterations` (after `warmup` untimed ones) of the slowest
// rank's time of each body, on the timer. The bodies take turns within every
// iteration, so a drift of the machine during the run (GPU clocks that fall
// as the chips heat up) touches all of them alike: measured one after the
// other, two identical plans differed by 10% on 4 H200s, the later one slower.
// The order rotates by one body every iteration: in a fixed order, of two
// plans that differed only in a setting, the one measured right after the
// other came out 1-5% faster on small shapes on 2 H200s whichever it was.
std::vector<double> measure_in_turn(int warmup, int iterations, Timer& timer,
                                    const std::vector<std::function<void()>>& bodies);

struct Collective {
  enum Kind { AllGather, ReduceScatter, AllReduce } kind = AllGather;
  weave_dtype_t dtype = WEAVE_FLOAT32;
  std::vector<int64_t> counts;  // elements per rank (AllReduce: one entry, the total)
};

// The communication alone: MPI collectives on host buffers, NCCL on device
// buffers (uneven counts through grouped point-to-point / per-block reduces,
// as Weave's sequential plan does).
class Communicator {
 public:
  Communicator(MPI_Comm comm, bool device);
  ~Communicator();
  void prepare(const Collective& c);  // allocates the buffers
  void run(const Collective& c, void* stream);

 private:
  MPI_Comm comm_;
  bool device_;
  void* nccl_ = nullptr;
  Buffer send_, recv_;
};

}  // namespace bench
