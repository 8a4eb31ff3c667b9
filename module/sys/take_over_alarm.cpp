#include "sys/take_over_alarm.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace agentq::sys {

namespace {

void signal_event(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(fd, &one, sizeof one);
}

void drain(int fd) {
  std::uint64_t count;
  [[maybe_unused]] ssize_t got = ::read(fd, &count, sizeof count);
}

}  // namespace

TakeOverAlarm::TakeOverAlarm() {
  // steady_clock is CLOCK_MONOTONIC on Linux, the timer's clock.
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  owner_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

TakeOverAlarm::~TakeOverAlarm() {
  if (timer_fd_ >= 0) ::close(timer_fd_);
  if (owner_fd_ >= 0) ::close(owner_fd_);
}

void TakeOverAlarm::arm(std::chrono::steady_clock::time_point at) {
  const std::int64_t when = steady_ns_of(at);
  due_ns_.store(when, std::memory_order_release);
  itimerspec spec{};
  spec.it_value.tv_sec = when / 1000000000;
  spec.it_value.tv_nsec = when % 1000000000;
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

void TakeOverAlarm::ask() { signal_event(owner_fd_); }

void TakeOverAlarm::stop() {
  stopping_.store(true, std::memory_order_release);
  signal_event(owner_fd_);
}

TakeOverAlarm::Ring TakeOverAlarm::wait() {
  pollfd fds[2] = {{timer_fd_, POLLIN, 0}, {owner_fd_, POLLIN, 0}};
  for (;;) {
    if (stopping_.load(std::memory_order_acquire)) return Ring::Stop;
    fds[0].revents = fds[1].revents = 0;
    if (::poll(fds, 2, -1) <= 0) continue;
    const bool asked = (fds[1].revents & POLLIN) != 0;
    if (fds[0].revents & POLLIN) drain(timer_fd_);
    if (asked) drain(owner_fd_);
    if (stopping_.load(std::memory_order_acquire)) return Ring::Stop;
    if (asked) return Ring::Asked;
    if (due_now()) return Ring::Due;
  }
}

void TakeOverAlarm::watch(const std::function<void(bool asked)>& on_ring) {
  for (Ring ring; (ring = wait()) != Ring::Stop;) on_ring(ring == Ring::Asked);
}

}  // namespace agentq::sys
