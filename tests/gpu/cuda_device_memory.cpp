#include "cuda_device_memory.hpp"

#include <mpi.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace weave_gpu_test {

void check_cuda(cudaError_t code, const char* call) {
  if (code == cudaSuccess) return;
  cudaGetLastError();
  throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(code) + " (" +
                           cudaGetErrorName(code) + ")");
}

bool select_device_for_rank(int* device, std::string* why_not) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess || count == 0) {
    cudaGetLastError();
    *why_not = std::string("no CUDA device (") + (code != cudaSuccess ? cudaGetErrorString(code) : "0 devices") + ")";
    return false;
  }
  // WEAVE_TEST_SHARE_GPUS=1 lets ranks share GPUs, for correctness only
  // (the ranks' kernels take turns on a GPU): emulated nodes over the
  // network flavour (scripts/emulate-nodes.sh) or a host identity per rank
  // (scripts/share-gpus.sh), where NCCL takes each for a host of its own.
  const char* share = std::getenv("WEAVE_TEST_SHARE_GPUS");
  const bool shared = share != nullptr && std::string(share) == "1";
  if (local_size > count && !shared) {
    *why_not = std::to_string(local_size) + " ranks on this node but " + std::to_string(count) +
               " GPUs: the GPU tests need one GPU per rank (WEAVE_TEST_SHARE_GPUS=1 shares them, with a host identity "
               "per rank for NCCL: scripts/share-gpus.sh)";
    return false;
  }
  *device = local_rank % count;
  const cudaError_t set = cudaSetDevice(*device);
  if (set != cudaSuccess) {
    cudaGetLastError();
    *why_not = std::string("cudaSetDevice failed: ") + cudaGetErrorString(set);
    return false;
  }
  return true;
}

CudaDeviceMemory::~CudaDeviceMemory() {
  if (stream_) cudaStreamDestroy(stream_);
}

bool CudaDeviceMemory::attach(std::string* why_not) {
  if (!select_device_for_rank(&device_, why_not)) return false;
  WEAVE_TEST_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  return true;
}

void* CudaDeviceMemory::allocate(std::size_t bytes) {
  void* pointer = nullptr;
  WEAVE_TEST_CUDA(cudaMalloc(&pointer, bytes));
  return pointer;
}

void CudaDeviceMemory::release(void* pointer) { cudaFree(pointer); }

// Copies go through the test's stream and are waited for, so they are
// ordered with the executes on that (non-blocking) stream.
void CudaDeviceMemory::upload(void* device, const void* host, std::size_t bytes) {
  WEAVE_TEST_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream_));
}

void CudaDeviceMemory::download(void* host, const void* device, std::size_t bytes) {
  WEAVE_TEST_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream_));
}

weave_status_t CudaDeviceMemory::execute(weave_plan_t plan, const weave_execute_args_t& args) {
  weave_execute_args_t on_stream = args;
  on_stream.stream = stream_;
  const weave_status_t status = weave_execute_ex(plan, &on_stream);
  if (status == WEAVE_SUCCESS) WEAVE_TEST_CUDA(cudaStreamSynchronize(stream_));
  return status;
}

}  // namespace weave_gpu_test
