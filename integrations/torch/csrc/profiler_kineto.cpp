// torch.profiler's device activities: a Kineto activity profiler for
// PrivateUse1 (REGISTER_PRIVATEUSE1_PROFILER), fed by an xdal tracer (ABI
// 1.2). While a profile records, every operator's correlation id is pushed
// as xdal's external id, so each kernel, copy and set xdal reports names
// the operator that enqueued it: Kineto links them (device time per
// operator in key_averages, flow arrows in the Chrome trace).
//
// Kineto's headers take USE_KINETO to mean "built with Kineto", which the
// installed libtorch is (its registry is what this file calls).
#define USE_KINETO 1
// Kineto formats metadata with fmt, whose compiled part libtorch does not
// export: header-only here.
#define FMT_HEADER_ONLY 1
#include "xdal_torch.h"

#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>

#include <unistd.h>

#include <map>
#include <set>
#include <unordered_map>

namespace torch_xdal {
namespace {

using libkineto::ActivityType;

// What an xdal activity is in Kineto's terms.
ActivityType kineto_type(xdal_activity_kind_t kind) {
  switch (kind) {
    case XDAL_ACTIVITY_MEMCPY: return ActivityType::GPU_MEMCPY;
    case XDAL_ACTIVITY_MEMSET: return ActivityType::GPU_MEMSET;
    default: return ActivityType::CONCURRENT_KERNEL;  // kernels, host functions, graph launches
  }
}

// Nanoseconds to add to xdal's timestamps (xdal_get_timestamp_ns's
// clock) for the operators' (c10::getTime, the Unix epoch).
int64_t xdal_clock_to_epoch_ns() {
  uint64_t xdal_now = 0;
  TX_CHECK(xdal_get_timestamp_ns(&xdal_now));
  return c10::getTime() - int64_t(xdal_now);
}

// An xdal call that enqueued work for an operator: a runtime activity on
// its host thread, from which the flow arrow goes to the work.
struct Call {
  std::string function;
  uint64_t correlation_id, external_id, start_ns, end_ns, thread_id;
};

struct Recorded {
  xdal_activity_kind_t kind;
  int device;
  uint64_t stream_id, correlation_id, start_ns, end_ns, bytes;
  std::string name;
};

class XdalKinetoSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    offset_ns_ = xdal_clock_to_epoch_ns();
    xdal_tracer_desc_t desc{};
    desc.struct_size = sizeof desc;
    desc.api = &on_api;
    desc.activity = &on_activities;
    desc.user_data = this;
    desc.activity_mask = (1u << XDAL_ACTIVITY_KERNEL) | (1u << XDAL_ACTIVITY_MEMCPY) | (1u << XDAL_ACTIVITY_MEMSET) |
                         (1u << XDAL_ACTIVITY_HOST_FUNC) | (1u << XDAL_ACTIVITY_GRAPH);
    const xdal_status_t s = xdal_tracer_create(&tracer_, &desc);
    if (s != XDAL_SUCCESS) errors_.push_back(std::string("xdal_tracer_create: ") + xdal_status_string(s));
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    if (tracer_) {
      xdal_tracer_destroy(tracer_);  // delivers what completed so far
      tracer_ = nullptr;
    }
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override {
    std::lock_guard<std::mutex> g(mutex_);
    std::vector<std::string> all = errors_;
    if (lost_) all.push_back("xdal: " + std::to_string(lost_) + " trace records lost (out of memory)");
    return all;
  }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_to,
                    int64_t /*start*/, int64_t /*end*/) override {
    std::lock_guard<std::mutex> g(mutex_);
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->gpuOpCount = int(recorded_.size());
    std::set<uint64_t> enqueued;
    for (const Recorded& r : recorded_) {
      buffer_->emplace_activity(buffer_->span, kineto_type(r.kind), r.name);
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = int64_t(r.start_ns) + offset_ns_;
      a.endTime = int64_t(r.end_ns) + offset_ns_;
      a.id = int32_t(r.correlation_id);
      a.device = r.device;
      a.resource = int64_t(r.stream_id);
      streams_.emplace(r.stream_id, r.device);
      a.addMetadata("device", r.device);
      a.addMetadata("stream", r.stream_id);
      a.addMetadata("correlation", r.correlation_id);
      if (r.bytes) a.addMetadata("bytes", r.bytes);
      auto call = calls_.find(r.correlation_id);
      if (call != calls_.end()) {
        // Device time per operator: the work's linked activity is the
        // operator whose id was pushed when the call enqueued it.
        a.addMetadata("External id", call->second.external_id);
        a.linked = linked_to(int32_t(call->second.external_id));
        a.flow.id = r.correlation_id;
        a.flow.type = libkineto::kLinkAsyncCpuGpu;
        a.flow.start = false;
        enqueued.insert(r.correlation_id);
      }
      logger.handleActivity(a);
    }
    // The calls that enqueued work, each with the start of its arrow.
    for (uint64_t id : enqueued) {
      const Call& c = calls_.at(id);
      buffer_->emplace_activity(buffer_->span, ActivityType::PRIVATEUSE1_RUNTIME, c.function);
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = int64_t(c.start_ns) + offset_ns_;
      a.endTime = int64_t(c.end_ns) + offset_ns_;
      a.id = int32_t(c.correlation_id);
      a.device = int32_t(getpid());
      a.resource = int64_t(c.thread_id);
      a.threadId = int32_t(c.thread_id);
      a.linked = linked_to(int32_t(c.external_id));
      a.flow.id = c.correlation_id;
      a.flow.type = libkineto::kLinkAsyncCpuGpu;
      a.flow.start = true;
      a.addMetadata("External id", c.external_id);
      a.addMetadata("correlation", c.correlation_id);
      logger.handleActivity(a);
    }
    status_ = libkineto::TraceStatus::READY;
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{0, 0, "xdal", xdal_backend_name()});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> infos;
    for (const auto& [stream, device] : streams_)
      infos.push_back({int64_t(stream), int64_t(stream), device, "xdal stream " + std::to_string(stream)});
    return infos;
  }

  // Kineto keeps the activities alive through this buffer (its logger only
  // points at them).
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override { xdal_correlation_push_external(id); }
  void popCorrelationId() override {
    uint64_t id = 0;
    xdal_correlation_pop_external(&id);
  }

 private:
  // xdal's callbacks must return, not throw (an exception unwinding into
  // xdal aborts the process): a record that cannot be kept (out of
  // memory) is counted, and errors() says how many were lost.
  static void on_api(void* self, const xdal_api_record_t* record) noexcept {
    if (!record->external_id) return;
    auto* s = static_cast<XdalKinetoSession*>(self);
    std::lock_guard<std::mutex> g(s->mutex_);
    try {
      s->calls_[record->correlation_id] = Call{record->function ? record->function : "xdal", record->correlation_id,
                                               record->external_id, record->start_ns, record->end_ns,
                                               record->thread_id};
    } catch (...) {
      ++s->lost_;
    }
  }

  static void on_activities(void* self, const xdal_activity_t* records, size_t count) noexcept {
    auto* s = static_cast<XdalKinetoSession*>(self);
    std::lock_guard<std::mutex> g(s->mutex_);
    for (size_t i = 0; i < count; ++i) {
      const xdal_activity_t& r = records[i];
      try {
        s->recorded_.push_back({r.kind, r.device, r.stream_id, r.correlation_id, r.start_ns, r.end_ns, r.bytes,
                                r.name ? r.name : "xdal"});
      } catch (...) {
        ++s->lost_;
      }
    }
  }

  xdal_tracer_t tracer_ = nullptr;
  int64_t offset_ns_ = 0;
  std::mutex mutex_;
  std::vector<Recorded> recorded_;
  std::unordered_map<uint64_t, Call> calls_;  // by the call's correlation id
  std::vector<std::string> errors_;
  size_t lost_ = 0;  // records the callbacks could not keep
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::map<uint64_t, int> streams_;
};

class XdalKinetoProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return activities_; }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& types,
                                                                 const libkineto::Config& /*config*/) override {
    for (ActivityType t : types)
      if (activities_.count(t)) return std::make_unique<XdalKinetoSession>();
    return nullptr;
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t /*ts_ms*/, int64_t /*duration_ms*/,
                                                                 const std::set<ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_{"xdal"};
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::GPU_MEMSET, ActivityType::PRIVATEUSE1_RUNTIME};
};

REGISTER_PRIVATEUSE1_PROFILER(XdalKinetoProfiler);

}  // namespace
}  // namespace torch_xdal
