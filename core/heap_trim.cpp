// glibc's malloc_trim(0): free chunks anywhere in the heap are returned (madvise), not only the
// top.
#include "core/heap_trim.h"

#include <cstdlib> // defines __GLIBC__ where glibc is the C library

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace shardlab {

void release_free_heap() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

} // namespace shardlab
