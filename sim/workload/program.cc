#include "sim/workload/program.h"

#include <stdexcept>

namespace cs::workload {

uint32_t Program::add(Op op, std::initializer_list<uint32_t> after) {
  return add(op, std::vector<uint32_t>(after));
}

uint32_t Program::add(Op op, const std::vector<uint32_t>& after) {
  const auto index = static_cast<uint32_t>(ops.size());
  op.deps_begin = static_cast<uint32_t>(deps.size());
  for (const uint32_t d : after) {
    if (d >= index) throw std::logic_error("program dependency on a later op");
    deps.push_back(d);
  }
  op.deps_end = static_cast<uint32_t>(deps.size());
  ops.push_back(op);
  streams[static_cast<int>(op.stream)].push_back(index);
  return index;
}

uint32_t Program::label(const std::string& text) {
  const auto [it, added] = label_index.emplace(text, static_cast<uint32_t>(labels.size()));
  if (added) labels.push_back(text);
  return it->second;
}

std::size_t Program::memory_bytes() const {
  std::size_t bytes = ops.capacity() * sizeof(Op) + deps.capacity() * sizeof(uint32_t);
  for (const auto& s : streams) bytes += s.capacity() * sizeof(uint32_t);
  for (const auto& l : labels) bytes += l.capacity();
  return bytes;
}

}  // namespace cs::workload
