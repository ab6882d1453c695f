// Graph mode: at::GraphImplInterface for xdal devices (what
// torch.accelerator.Graph and torch.xdal.XdalGraph drive), over xdal's
// stream capture: capture_begin is xdal_stream_begin_capture on the
// current stream, capture_end xdal_stream_end_capture, instantiate
// xdal_graph_instantiate, replay xdal_graph_launch on the current stream.
// Tensors allocated during the capture come from the graph's memory pool
// (graph_pools.cpp); what captured host kernels need is kept alive with
// the graph (keep_for_capture).
#include "xdal_torch.h"

#include <ATen/core/GraphImplInterface.h>
#include <c10/util/Registry.h>

#include <memory>
#include <unordered_map>

namespace torch_xdal {
namespace {

// What the work captured so far needs alive, by capture id, until the
// graph that ends the capture takes it.
struct Keepalive {
  std::mutex mutex;
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<void>>> by_capture;
};

Keepalive& keepalive() {
  static auto* k = new Keepalive();  // leaked: graphs may die at shutdown
  return *k;
}

xdal_capture_mode_t native_mode(at::GraphCaptureMode mode) {
  switch (mode) {
    // torch.cuda.graph's default is "global" too.
    case at::GraphCaptureMode::Default:
    case at::GraphCaptureMode::Global: return XDAL_CAPTURE_MODE_GLOBAL;
    case at::GraphCaptureMode::ThreadLocal: return XDAL_CAPTURE_MODE_THREAD_LOCAL;
    case at::GraphCaptureMode::Relaxed: return XDAL_CAPTURE_MODE_RELAXED;
  }
  TORCH_CHECK(false, "xdal: unknown graph capture mode ", int(mode));
}

class XdalGraph final : public at::GraphImplInterface {
 public:
  explicit XdalGraph(const at::GraphImplArgs& args) : keep_graph_(args.keep_graph) {}

  ~XdalGraph() override {
    try {
      abandon_capture();
      reset();
    } catch (const std::exception& e) {
      TORCH_WARN("xdal: destroying a graph failed: ", e.what());
    }
  }

  void capture_begin(c10::MempoolId_t pool, at::GraphCaptureMode mode) override {
    TORCH_CHECK(!capture_ && !graph_ && !exec_,
                "xdal: this graph already holds a capture; reset() it before capturing again");
    const xdal_capture_mode_t native = native_mode(mode);
    const c10::DeviceIndex device = current_device();
    const c10::Stream stream = current_stream(device);
    // As CUDA: the default stream orders the device's synchronous work,
    // which a capture refuses.
    TORCH_CHECK(stream.id() != 0,
                "xdal: graphs must be captured on a stream other than the default stream "
                "(with torch.xdal.stream(torch.xdal.Stream()), or torch.xdal.graph, which picks one); "
                "replays may run on any stream");
    const c10::MempoolId_t id = pool == c10::MempoolId_t{0, 0} ? new_graph_pool_id(/*user=*/false) : pool;
    TX_CHECK(xdal_stream_begin_capture(native_stream(stream), native));
    uint64_t capture_id = 0;
    capture_status(stream, &capture_id);
    {
      std::lock_guard<std::mutex> g(keepalive().mutex);
      keepalive().by_capture[capture_id];
    }
    try {
      begin_allocate_to_pool(device, id, capture_id);
    } catch (...) {
      xdal_graph_t dropped = nullptr;
      if (xdal_stream_end_capture(native_stream(stream), &dropped) == XDAL_SUCCESS) xdal_graph_destroy(dropped);
      take_keepalive(capture_id);
      throw;
    }
    mempool_ = id;
    capture_ = Capture{stream, capture_id};
  }

  void capture_end() override {
    TORCH_CHECK(capture_, "xdal: capture_end() without capture_begin()");
    const c10::Stream stream = current_stream(capture_->stream.device_index());
    TORCH_CHECK(stream == capture_->stream, "xdal: capture_end() must be called on the stream capture_begin() ",
                "captured (stream ", capture_->stream.id(), "), not on stream ", stream.id());
    xdal_graph_t graph = nullptr;
    const xdal_status_t status = xdal_stream_end_capture(native_stream(stream), &graph);
    const uint64_t id = capture_->id;
    end_allocate_to_pool(id);
    keep_ = take_keepalive(id);
    device_ = capture_->stream.device_index();
    capture_.reset();
    if (status != XDAL_SUCCESS) {
      // Nothing to replay: the pool is this graph's no more.
      keep_.clear();
      release_graph_pool(mempool_);
      TORCH_CHECK(false, "xdal: the capture failed: ", xdal_status_string(status), " (", last_error_message(),
                  "); an operation that cannot be captured (a synchronization, .item(), .cpu(), an operator "
                  "without an xdal kernel on a backend that runs no host code) broke it");
    }
    graph_ = graph;
    pool_held_ = true;
    if (!keep_graph_) {
      instantiate();
      if (!debug_) destroy_graph();
    }
  }

  void instantiate() override {
    TORCH_CHECK(graph_, "xdal: instantiate() needs a captured graph (capture with keep_graph=True)");
    TORCH_CHECK(!exec_, "xdal: this graph was already instantiated");
    TX_CHECK(xdal_graph_instantiate(&exec_, graph_));
  }

  void replay() override {
    if (!exec_ && graph_) instantiate();
    TORCH_CHECK(exec_, "xdal: replay() needs a captured graph");
    const c10::Stream stream = current_stream(device_);
    TX_CHECK(xdal_graph_launch(exec_, native_stream(stream)));
    // reset() waits for this point before giving the memory away.
    if (!replayed_) {
      DeviceSwitch on(device_);
      TX_CHECK(xdal_event_create(&replayed_, XDAL_EVENT_DISABLE_TIMING));
    }
    TX_CHECK(xdal_event_record(replayed_, native_stream(stream)));
  }

  void reset() override {
    TORCH_CHECK(!capture_, "xdal: reset() during a capture; end it first");
    if (replayed_) {
      // Launches of one exec run one after the other: the last one's end is
      // every replay's.
      TX_CHECK(xdal_event_synchronize(replayed_));
      TX_CHECK(xdal_event_destroy(replayed_));
      replayed_ = nullptr;
    }
    if (exec_) {
      TX_CHECK(xdal_graph_exec_destroy(exec_));
      exec_ = nullptr;
    }
    destroy_graph();
    keep_.clear();
    if (pool_held_) {
      pool_held_ = false;
      release_graph_pool(mempool_);
    }
  }

  c10::MempoolId_t pool() const override { return mempool_; }

  void enable_debug_mode() override { debug_ = true; }

  void debug_dump(const std::string& path) override {
    TORCH_CHECK(graph_, "xdal: debug_dump() needs the captured graph: call enable_debug_mode() before capturing ",
                "(or capture with keep_graph=True)");
    TX_CHECK(xdal_graph_debug_dump(graph_, path.c_str()));
  }

 private:
  struct Capture {
    c10::Stream stream;
    uint64_t id;
  };

  static std::vector<std::shared_ptr<void>> take_keepalive(uint64_t capture_id) {
    std::lock_guard<std::mutex> g(keepalive().mutex);
    auto it = keepalive().by_capture.find(capture_id);
    if (it == keepalive().by_capture.end()) return {};
    std::vector<std::shared_ptr<void>> kept = std::move(it->second);
    keepalive().by_capture.erase(it);
    return kept;
  }

  // A graph dropped while it captures: the stream leaves the capture (else
  // everything enqueued on it later would be recorded into a graph nobody
  // replays), and what the capture held goes.
  void abandon_capture() {
    if (!capture_) return;
    xdal_graph_t graph = nullptr;
    if (xdal_stream_end_capture(native_stream(capture_->stream), &graph) == XDAL_SUCCESS) xdal_graph_destroy(graph);
    end_allocate_to_pool(capture_->id);
    take_keepalive(capture_->id);
    capture_.reset();
    release_graph_pool(mempool_);
  }

  void destroy_graph() {
    if (!graph_) return;
    TX_CHECK(xdal_graph_destroy(graph_));
    graph_ = nullptr;
  }

  bool keep_graph_;
  bool debug_ = false;
  std::optional<Capture> capture_;
  c10::DeviceIndex device_ = 0;
  c10::MempoolId_t mempool_{0, 0};
  bool pool_held_ = false;  // a capture into mempool_ that reset() gives back
  xdal_graph_t graph_ = nullptr;
  xdal_graph_exec_t exec_ = nullptr;
  xdal_event_t replayed_ = nullptr;
  std::vector<std::shared_ptr<void>> keep_;
};

}  // namespace

bool keep_for_capture(uint64_t capture_id, std::shared_ptr<void> object) {
  std::lock_guard<std::mutex> g(keepalive().mutex);
  auto it = keepalive().by_capture.find(capture_id);
  if (it == keepalive().by_capture.end()) return false;
  it->second.push_back(std::move(object));
  return true;
}

void keep_storage_for_capture(const c10::Stream& stream, const c10::Storage& storage) {
  if (!graph_capture_under_way()) return;
  uint64_t capture_id = 0;
  if (capture_status(stream, &capture_id) == XDAL_CAPTURE_STATUS_ACTIVE)
    keep_for_capture(capture_id, std::make_shared<c10::Storage>(storage));
}

void register_graph_impl() {
  // Keyed by the device type's name, which is known only once the
  // PrivateUse1 backend is renamed "xdal".
  const std::string key = c10::DeviceTypeName(kXdal, /*lower_case=*/false);
  if (at::GraphImplRegistry()->Has(key)) return;
  at::GraphImplRegistry()->Register(
      key, [](const at::GraphImplArgs& args) -> std::unique_ptr<at::GraphImplInterface> {
        return std::make_unique<XdalGraph>(args);
      });
}

xdal_capture_status_t capture_status(const c10::Stream& stream, uint64_t* capture_id) {
  xdal_capture_status_t status = XDAL_CAPTURE_STATUS_NONE;
  TX_CHECK(xdal_stream_get_capture_info(native_stream(stream), &status, capture_id));
  return status;
}

}  // namespace torch_xdal
