#include "cli/mcp/outgoing_lines.h"

#include <poll.h>

#include <chrono>
#include <thread>

namespace cocoon::mcp {

// Shared with the writer thread, which may outlive the OutgoingLines when a
// client stops reading (see the destructor).
struct OutgoingLines::State {
  LineWriter writer;
  size_t droppable_limit = 0;
  std::mutex mutex;
  std::condition_variable changed;
  struct Item {
    std::string line;
    std::function<std::string()> make;  // set for a deferred line
    size_t bytes = 0;
  };
  std::deque<Item> queue;
  size_t queued_bytes = 0;
  uint64_t sent = 0;     // lines taken off the queue and written
  uint64_t queued = 0;   // lines ever queued
  bool closing = false;
  bool finished = false;
};

OutgoingLines::OutgoingLines(LineWriter writer, size_t droppable_limit) : state_(std::make_shared<State>()) {
  state_->writer = std::move(writer);
  state_->droppable_limit = droppable_limit;
  std::thread(Run, state_).detach();
}

OutgoingLines::~OutgoingLines() {
  std::unique_lock lock(state_->mutex);
  state_->closing = true;
  state_->changed.notify_all();
  // Everything queued is normally written by now (the server drains before
  // it ends); a writer that makes no progress for this long is writing to a
  // client that stopped reading.
  uint64_t last_sent = state_->sent;
  while (!state_->finished) {
    if (state_->changed.wait_for(lock, std::chrono::seconds(2)) == std::cv_status::timeout && state_->sent == last_sent) {
      return;  // abandoned: the thread holds its own reference to the state
    }
    last_sent = state_->sent;
  }
}

void OutgoingLines::Run(const std::shared_ptr<State>& state) {
  std::unique_lock lock(state->mutex);
  for (;;) {
    state->changed.wait(lock, [&] { return !state->queue.empty() || state->closing; });
    if (state->queue.empty()) break;
    State::Item item = std::move(state->queue.front());
    state->queue.pop_front();
    state->queued_bytes -= item.bytes;
    lock.unlock();
    bool lost = false;
    if (item.make) {
      try {
        item.line = item.make();
      } catch (...) {  // bad_alloc: the line is lost, the writer goes on
        lost = true;
      }
      item.make = nullptr;  // what it held goes before the line is written
    }
    if (!lost) state->writer(item.line);
    item.line = std::string();
    lock.lock();
    ++state->sent;
    state->changed.notify_all();
  }
  state->finished = true;
  state->changed.notify_all();
}

void OutgoingLines::Send(std::string line) {
  std::lock_guard lock(state_->mutex);
  state_->queued_bytes += line.size();
  const size_t bytes = line.size();
  state_->queue.push_back({std::move(line), nullptr, bytes});
  ++state_->queued;
  state_->changed.notify_all();
}

bool OutgoingLines::SendIfRoom(std::string line) {
  std::lock_guard lock(state_->mutex);
  if (state_->queued_bytes >= state_->droppable_limit) return false;
  state_->queued_bytes += line.size();
  const size_t bytes = line.size();
  state_->queue.push_back({std::move(line), nullptr, bytes});
  ++state_->queued;
  state_->changed.notify_all();
  return true;
}

void OutgoingLines::SendDeferred(size_t bytes, std::function<std::string()> make) {
  std::lock_guard lock(state_->mutex);
  state_->queued_bytes += bytes;
  state_->queue.push_back({std::string(), std::move(make), bytes});
  ++state_->queued;
  state_->changed.notify_all();
}

bool OutgoingLines::WaitForRoom(size_t limit, int stop_fd) {
  std::unique_lock lock(state_->mutex);
  while (state_->queued_bytes > limit) {
    state_->changed.wait_for(lock, std::chrono::milliseconds(50));
    pollfd p{stop_fd, POLLIN, 0};
    if (stop_fd >= 0 && poll(&p, 1, 0) > 0) return false;
  }
  return true;
}

bool OutgoingLines::HasRoom(size_t limit) const {
  std::lock_guard lock(state_->mutex);
  return state_->queued_bytes <= limit;
}

bool OutgoingLines::Drain(int stop_fd) {
  std::unique_lock lock(state_->mutex);
  const uint64_t target = state_->queued;
  for (;;) {
    if (state_->sent >= target) return true;
    if (stop_fd < 0) {
      state_->changed.wait(lock);
      continue;
    }
    state_->changed.wait_for(lock, std::chrono::milliseconds(50));
    pollfd p{stop_fd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) return false;
  }
}

}  // namespace cocoon::mcp
