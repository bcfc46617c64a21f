// dlopen/dlsym with messages that say what to do. A library opened here stays loaded for the
// process's life (no dlclose): cuBLAS keeps process-wide state beyond its handles, and closing
// one a process has used gains nothing.
#include "core/shared_library.h"

#include "core/error.h"

#include <dlfcn.h>
#include <link.h>

namespace shardlab {

namespace {
std::string last_dl_error() {
    const char* e = dlerror();
    return e ? e : "unknown reason";
}
} // namespace

SharedLibrary SharedLibrary::open(const std::string& file, const std::string& fallback_dir,
                                  const std::string& what) {
    if (void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) return {h, file};
    std::string why = last_dl_error();
    if (!fallback_dir.empty()) {
        const std::string path = fallback_dir + "/" + file;
        if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return {h, path};
        why += "; nor as " + path + ": " + last_dl_error();
    }
    throw Error("cannot load " + what + " (" + file + "): " + why + ". Install it, or add the " +
                "folder that holds " + file + " to LD_LIBRARY_PATH");
}

void* SharedLibrary::symbol(const char* name) const {
    dlerror(); // forget an earlier failure, so the message below is this call's
    if (void* p = dlsym(handle_, name)) return p;
    throw Error(path_ + " has no " + name + " (" + last_dl_error() +
                "): it is older than the version this binary was built against; install that " +
                "version or newer");
}

std::string SharedLibrary::file() const {
    const link_map* map = nullptr;
    if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return path_;
    return map->l_name;
}

} // namespace shardlab
