// CUDA graph capture of the cuda::dev ops (kernels.h: BeginCapture / EndCapture / Capturing):
// stream capture on the open DeviceContext's stream, the capture state (what was refused) in
// the context, and OpGraph (ops/graph.h) around the instantiated graph, which holds the context
// it runs on.
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <utility>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "ops/graph.h"

namespace g4::cuda {
namespace {

class CudaGraph final : public OpGraph {
 public:
  CudaGraph(std::shared_ptr<DeviceContext> dc, cudaGraph_t graph, cudaGraphExec_t exec,
            int64_t nodes)
      : dc_(std::move(dc)), graph_(graph), exec_(exec), nodes_(nodes) {}
  ~CudaGraph() override {
    // Launches still queued may use the graph's memory nodes: wait for them first (never
    // during a capture, where a wait is illegal and there is nothing of ours in flight to
    // record anyway; nor after a failure, where the wait would only report it again).
    if (!dc_->capturing() && !dc_->failed()) (void)cudaStreamSynchronize(dc_->stream());
    (void)cudaGraphExecDestroy(exec_);
    (void)cudaGraphDestroy(graph_);
    (void)cudaGetLastError();  // nothing here is an op's failure
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  Status Launch() override {
    if (dc_->failed()) return dc_->error();
    if (dc_->capturing()) {
      return FailedPrecondition("OpGraph::Launch during a capture (graphs are not nested)");
    }
    if (!dc_->Ok(cudaGraphLaunch(exec_, dc_->stream()), "graph launch")) return dc_->error();
    return Status();
  }
  int64_t num_ops() const override { return nodes_; }

 private:
  std::shared_ptr<DeviceContext> dc_;  // kept open while the graph may be launched
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  int64_t nodes_;
};

std::string CudaErrorText(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace

bool Capturing() {
  const DeviceContext* dc = DeviceContext::Current();
  return dc != nullptr && dc->capturing();
}

Status BeginCapture() {
  DeviceContext* dc = ActiveDevice();
  if (dc == nullptr) return LastError();
  if (dc->capturing()) {
    return FailedPrecondition("BeginCapture: a capture is already in progress");
  }
  // A launch error pending from an earlier op is that op's, not the capture's.
  if (!dc->Launched("an op before a capture")) return LastError();
  if (cudaError_t e = cudaStreamBeginCapture(dc->stream(), cudaStreamCaptureModeThreadLocal);
      e != cudaSuccess) {
    (void)cudaGetLastError();
    return Internal("cudaStreamBeginCapture: " + CudaErrorText(e));
  }
  dc->SetCapturing(true);
  return Status();
}

StatusOr<std::unique_ptr<OpGraph>> EndCapture() {
  DeviceContext* dc = DeviceContext::Current();
  if (dc == nullptr || !dc->capturing()) {
    return FailedPrecondition("EndCapture without BeginCapture");
  }
  // Pending launch errors are the capture's (recorded as its failure while still capturing).
  dc->Launched("an op during the capture");
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(dc->stream(), &graph);
  dc->SetCapturing(false);
  std::string why = dc->TakeCaptureFailure();
  if (why.empty() && end != cudaSuccess) why = "cudaStreamEndCapture: " + CudaErrorText(end);
  if (why.empty() && graph == nullptr) why = "cudaStreamEndCapture returned no graph";
  cudaGraphExec_t exec = nullptr;
  size_t nodes = 0;
  if (why.empty()) {
    if (cudaError_t e = cudaGraphGetNodes(graph, nullptr, &nodes); e != cudaSuccess) {
      why = "cudaGraphGetNodes: " + CudaErrorText(e);
    } else if (cudaError_t ie = cudaGraphInstantiate(&exec, graph, 0); ie != cudaSuccess) {
      why = "cudaGraphInstantiate: " + CudaErrorText(ie);
      exec = nullptr;
    }
  }
  if (!why.empty()) {
    // The refused calls and an invalidated capture leave their error with the runtime: it is
    // the capture's (returned here), not an op's, so it must not reach the next op's check.
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return FailedPrecondition("cannot record a CUDA graph: " + why);
  }
  return std::unique_ptr<OpGraph>(
      std::make_unique<CudaGraph>(dc->shared_from_this(), graph, exec,
                                  static_cast<int64_t>(nodes)));
}

}  // namespace g4::cuda
