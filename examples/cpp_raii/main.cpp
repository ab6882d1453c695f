// cpp_raii: xdal from C++17 with owning wrappers.
//
// xdal is a C API: every call returns a status and every resource has a
// matching destroy call. In C++ the natural shape is an exception for a
// failing status and a move-only class per resource, so that a failure
// half-way releases everything created so far. This example keeps those
// wrappers small enough to copy into a project.
#include <xdal/xdal.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace xdal {

// A failing xdal call: its status, and the library's detailed message.
class Error : public std::runtime_error {
 public:
  Error(xdal_status_t status, const std::string &what)
      : std::runtime_error(what), status_(status) {}
  xdal_status_t status() const noexcept { return status_; }

 private:
  xdal_status_t status_;
};

// The calling thread's last error message ("xdal_memcpy: ...").
inline std::string last_error_message() {
  std::size_t needed = 0;
  if (xdal_get_last_error_message(nullptr, 0, &needed) != XDAL_SUCCESS || needed == 0) {
    return std::string();
  }
  std::string message(needed, '\0');
  if (xdal_get_last_error_message(&message[0], message.size(), &needed) != XDAL_SUCCESS) {
    return std::string();
  }
  message.resize(message.find('\0') == std::string::npos ? message.size()
                                                         : message.find('\0'));
  return message;
}

// Turns a failing status into an Error; `call` names what was attempted.
inline void check(xdal_status_t status, const char *call) {
  if (status == XDAL_SUCCESS) return;
  throw Error(status, std::string(call) + ": " + xdal_status_string(status) + ": " +
                          last_error_message());
}

// An owned stream; destroying it lets its pending work complete.
class Stream {
 public:
  explicit Stream(std::uint32_t flags = XDAL_STREAM_DEFAULT, int priority = 0) {
    check(xdal_stream_create(&handle_, flags, priority), "xdal_stream_create");
  }
  ~Stream() {
    if (handle_ != nullptr) (void)xdal_stream_destroy(handle_);
  }
  Stream(Stream &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Stream &operator=(Stream &&other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  xdal_stream_t get() const noexcept { return handle_; }
  void synchronize() const { check(xdal_stream_synchronize(handle_), "xdal_stream_synchronize"); }

 private:
  xdal_stream_t handle_ = nullptr;
};

// An owned event.
class Event {
 public:
  explicit Event(std::uint32_t flags = XDAL_EVENT_DEFAULT) {
    check(xdal_event_create(&handle_, flags), "xdal_event_create");
  }
  ~Event() {
    if (handle_ != nullptr) (void)xdal_event_destroy(handle_);
  }
  Event(Event &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Event &operator=(Event &&other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  xdal_event_t get() const noexcept { return handle_; }
  void record(const Stream &stream) { check(xdal_event_record(handle_, stream.get()), "xdal_event_record"); }
  void synchronize() const { check(xdal_event_synchronize(handle_), "xdal_event_synchronize"); }
  // Milliseconds from `start` to this event.
  float elapsed_since(const Event &start) const {
    float ms = 0.0f;
    check(xdal_event_elapsed_time(&ms, start.handle_, handle_), "xdal_event_elapsed_time");
    return ms;
  }

 private:
  xdal_event_t handle_ = nullptr;
};

// `count` elements of T in device memory of the current device.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    void *ptr = nullptr;
    check(xdal_malloc(&ptr, bytes()), "xdal_malloc");
    data_ = static_cast<T *>(ptr);
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) (void)xdal_free(data_);
  }
  DeviceBuffer(DeviceBuffer &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  T *data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

  void upload(const std::vector<T> &host, const Stream &stream) {
    check(host.size() == count_ ? XDAL_SUCCESS : XDAL_ERROR_INVALID_VALUE, "upload");
    check(xdal_memcpy_async(data_, host.data(), bytes(), XDAL_MEMCPY_HOST_TO_DEVICE, stream.get()),
          "xdal_memcpy_async");
  }
  void download(std::vector<T> &host, const Stream &stream) const {
    host.resize(count_);
    check(xdal_memcpy_async(host.data(), data_, bytes(), XDAL_MEMCPY_DEVICE_TO_HOST, stream.get()),
          "xdal_memcpy_async");
  }
  void copy_from(const DeviceBuffer &other, const Stream &stream) {
    check(other.count_ == count_ ? XDAL_SUCCESS : XDAL_ERROR_INVALID_VALUE, "copy_from");
    check(xdal_memcpy_async(data_, other.data_, bytes(), XDAL_MEMCPY_DEVICE_TO_DEVICE, stream.get()),
          "xdal_memcpy_async");
  }

 private:
  T *data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace xdal

namespace {

int run() {
  int count = 0;
  xdal::check(xdal_device_get_count(&count), "xdal_device_get_count");
  std::printf("backend %s, %d device(s)\n", xdal_backend_name(), count);

  // A failing call becomes an exception that carries the status and message.
  try {
    xdal::check(xdal_device_set(count), "xdal_device_set");
    std::fprintf(stderr, "cpp_raii: xdal_device_set(%d) should have failed\n", count);
    return 1;
  } catch (const xdal::Error &e) {
    if (e.status() != XDAL_ERROR_INVALID_DEVICE) {
      std::fprintf(stderr, "cpp_raii: unexpected error: %s\n", e.what());
      return 1;
    }
    std::printf("expected failure: %s\n", e.what());
  }

  constexpr std::size_t n = 1 << 16;
  std::vector<float> input(n);
  std::iota(input.begin(), input.end(), 0.5f);
  std::vector<float> output;

  xdal::Stream stream;
  xdal::Event start, stop;
  xdal::DeviceBuffer<float> a(n), b(n);

  start.record(stream);
  a.upload(input, stream);
  b.copy_from(a, stream);
  b.download(output, stream);
  stop.record(stream);
  stream.synchronize();

  if (output != input) {
    std::fprintf(stderr, "cpp_raii: the data that came back differs\n");
    return 1;
  }
  std::printf("round trip of %zu floats: ok, %.3f ms\n", n,
              static_cast<double>(stop.elapsed_since(start)));

  // Moving a buffer hands over ownership: exactly one free happens.
  xdal::DeviceBuffer<float> moved(std::move(a));
  if (a.data() != nullptr || moved.size() != n) {
    std::fprintf(stderr, "cpp_raii: move did not transfer ownership\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cpp_raii: %s\n", e.what());
    return 1;
  }
}
