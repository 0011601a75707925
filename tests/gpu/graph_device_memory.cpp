#include "graph_device_memory.hpp"

#include <stdexcept>

namespace weave_gpu_test {

namespace {

bool same_buffers(const weave_execute_args_t& x, const weave_execute_args_t& y) {
  return x.a == y.a && x.b == y.b && x.c == y.c && x.bias == y.bias && x.gathered_a == y.gathered_a &&
         x.ld_gathered_a == y.ld_gathered_a && x.alpha == y.alpha && x.beta == y.beta;
}

}  // namespace

GraphDeviceMemory::~GraphDeviceMemory() { drop_graph(); }

void GraphDeviceMemory::drop_graph() {
  if (graph_) cudaGraphExecDestroy(graph_);
  graph_ = nullptr;
  plan_ = nullptr;
}

void GraphDeviceMemory::plan_finished(weave_plan_t plan) {
  if (plan == plan_) drop_graph();
}

weave_status_t GraphDeviceMemory::execute(weave_plan_t plan, const weave_execute_args_t& args) {
  if (graph_ && plan == plan_) {
    // A graph replays the pointers and scalars it was captured with.
    if (!same_buffers(args, captured_args_))
      throw std::runtime_error("a replay was asked for with other buffers or scalars than the capture");
    WEAVE_TEST_CUDA(cudaGraphLaunch(graph_, stream()));
    WEAVE_TEST_CUDA(cudaStreamSynchronize(stream()));
    ++replays_;
    return WEAVE_SUCCESS;
  }
  drop_graph();
  weave_execute_args_t on_stream = args;
  on_stream.stream = stream();
  WEAVE_TEST_CUDA(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeGlobal));
  const weave_status_t status = weave_execute_ex(plan, &on_stream);
  cudaGraph_t graph = nullptr;
  // End the capture whatever happened, so the stream is usable again.
  const cudaError_t ended = cudaStreamEndCapture(stream(), &graph);
  if (status != WEAVE_SUCCESS) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return status;
  }
  check_cuda(ended, "cudaStreamEndCapture");
  const cudaError_t instantiated = cudaGraphInstantiate(&graph_, graph, 0);
  cudaGraphDestroy(graph);
  check_cuda(instantiated, "cudaGraphInstantiate");
  plan_ = plan;
  captured_args_ = args;
  ++captures_;
  WEAVE_TEST_CUDA(cudaGraphLaunch(graph_, stream()));
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream()));
  return WEAVE_SUCCESS;
}

}  // namespace weave_gpu_test
