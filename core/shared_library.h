// A shared library opened when it is first needed (dlopen), not when the process starts: cuBLAS
// takes 0.4-0.9 s and ~200 MB to load, and a process that never makes a CUDA backend (a CPU rank,
// `plan`, most tests) should not pay that.
#pragma once

#include <string>
#include <utility>

namespace shardlab {

class SharedLibrary {
  public:
    // Opens `file` (a soname such as "libcublas.so.13") the way the loader finds any library
    // (LD_LIBRARY_PATH, the binary's run path, the system's cache), else as `fallback_dir`/`file`
    // (where the build found it). The error names `what`, both tries and the fix.
    static SharedLibrary open(const std::string& file, const std::string& fallback_dir,
                              const std::string& what);

    // The address of `name`, cast to the function pointer type F; throws Error naming the library
    // when it has no such symbol (a version older than the one the build used).
    template <typename F>
    F function(const char* name) const {
        return reinterpret_cast<F>(symbol(name));
    }
    void* symbol(const char* name) const;

    // The path it was opened by: the soname, or the fallback folder's file.
    const std::string& path() const { return path_; }
    // The file the loader took, as it maps it (e.g. /usr/local/cuda/lib/libcublas.so.13).
    std::string file() const;

  private:
    SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
    void* handle_; // never closed: see shared_library.cpp
    std::string path_;
};

} // namespace shardlab
