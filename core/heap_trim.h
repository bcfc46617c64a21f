// Hands the C library's free heap back to the system (glibc: malloc_trim), so pages that host
// staging freed stop counting in the process's resident memory. Without it, glibc keeps freed
// blocks of a few MB resident between the caching allocator's blocks (its mmap threshold rises to
// the largest block freed), and a rank's RSS holds memory that nothing uses (docs/MEMORY.md
// section 11). A no-op where the C library has no such call.
#pragma once

namespace shardlab {

void release_free_heap();

} // namespace shardlab
