// Where a loaded object's code lies, for the signal handlers that decide
// by the interrupted instruction's address (interrupt_gate, stack_guard).
// Collected once with dl_iterate_phdr; looked up without locks or
// allocation, so a handler may call range_of.
#pragma once

#include <link.h>

#include <cstddef>
#include <cstdint>

namespace agentq::ecl {

struct CodeRange {
  std::uintptr_t start;
  std::uintptr_t end;
};

// True when one of INFO's loaded segments holds ADDRESS.
inline bool object_contains(const dl_phdr_info* info, std::uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (address >= start && address < start + segment.p_memsz) return true;
  }
  return false;
}

// Appends INFO's executable segments to RANGES, which holds COUNT of at
// most CAPACITY.
inline void add_code_ranges(const dl_phdr_info* info, CodeRange* ranges, std::size_t& count, std::size_t capacity) {
  for (int i = 0; i < info->dlpi_phnum && count < capacity; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || !(segment.p_flags & PF_X)) continue;
    std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    ranges[count++] = {start, start + segment.p_memsz};
  }
}

// The range of RANGES (COUNT of them) that holds PC, or null.
inline const CodeRange* range_of(std::uintptr_t pc, const CodeRange* ranges, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (pc >= ranges[i].start && pc < ranges[i].end) return &ranges[i];
  return nullptr;
}

}  // namespace agentq::ecl
