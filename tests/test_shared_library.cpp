// core/shared_library: a library opened at run time, and the messages when it or a function in
// it is missing (they must name the file and the fix).
#include "core/error.h"
#include "core/shared_library.h"
#include "tests/mapped_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

using namespace shardlab;

namespace {
// The message of the Error that f throws ("" when it throws none).
template <typename F>
std::string error_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// The file this process loaded `soname` from, as /proc/self/maps lists it.
std::string loaded_path(const std::string& soname) {
    for (const std::string& file : test::mapped_files())
        if (file.ends_with("/" + soname)) return file;
    ADD_FAILURE() << soname << " is not in /proc/self/maps";
    return "";
}
} // namespace

TEST(SharedLibrary, OpensBySonameAndCallsAFunction) {
    const auto m = SharedLibrary::open("libm.so.6", "", "the C math library");
    EXPECT_EQ(m.path(), "libm.so.6");
    const auto cosine = m.function<double (*)(double)>("cos");
    EXPECT_EQ(cosine(0.0), 1.0);
}

TEST(SharedLibrary, FallsBackToTheFolderTheBuildFoundItIn) {
    // A copy of libm under a name the loader's own search cannot find: only the folder has it.
    const auto dir = std::filesystem::temp_directory_path() /
                     ("shardlab-shared-library-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(loaded_path("libm.so.6"), dir / "libshardlab-test-m.so",
                               std::filesystem::copy_options::overwrite_existing);
    const auto m = SharedLibrary::open("libshardlab-test-m.so", dir.string(), "a test copy");
    EXPECT_EQ(m.path(), (dir / "libshardlab-test-m.so").string());
    EXPECT_EQ(m.function<double (*)(double)>("cos")(0.0), 1.0);
    std::filesystem::remove_all(dir);

    const std::string missing =
        error_of([] { SharedLibrary::open("libshardlab-absent.so.1", "/nonexistent", "X 1"); });
    EXPECT_NE(missing.find("cannot load X 1 (libshardlab-absent.so.1)"), std::string::npos)
        << missing;
    EXPECT_NE(missing.find("nor as /nonexistent/libshardlab-absent.so.1"), std::string::npos)
        << missing;
    EXPECT_NE(missing.find("LD_LIBRARY_PATH"), std::string::npos) << missing;
}

TEST(SharedLibrary, AMissingFunctionNamesTheLibraryAndTheFunction) {
    const auto m = SharedLibrary::open("libm.so.6", "", "libm");
    const std::string e = error_of([&] { m.symbol("shardlab_no_such_function"); });
    EXPECT_NE(e.find("libm.so.6 has no shardlab_no_such_function"), std::string::npos) << e;
    EXPECT_NE(e.find("older than the version this binary was built against"), std::string::npos)
        << e;
}
