// Outputs named through symbolic links or as devices: file_target resolves them, and the writers
// that write beside and rename over (safetensors whole and streamed) replace the file a link names,
// keeping the link, and write a device in place instead of replacing its node with a file.
#include "core/error.h"
#include "core/file_target.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

using namespace shardlab;
namespace fs = std::filesystem;

namespace {
struct TempDir {
    fs::path dir =
        fs::temp_directory_path() / ("shardlab-file-target-" + std::to_string(::getpid()));
    TempDir() {
        fs::remove_all(dir);
        fs::create_directories(dir / "store");
    }
    ~TempDir() { fs::remove_all(dir); }
};

SafeTensorsFile one_tensor(float v) {
    SafeTensorsFile f;
    f.tensors.push_back({"w", DType::f32, {1}, std::vector<unsigned char>(4)});
    std::memcpy(f.tensors[0].data.data(), &v, 4);
    return f;
}

float first_value(const fs::path& p) {
    float v = 0;
    std::memcpy(&v, read_safetensors(p.string()).tensors.at(0).data.data(), 4);
    return v;
}
} // namespace

TEST(FileTarget, FollowsLinksToTheFileTheyName) {
    TempDir t;
    const fs::path target = t.dir / "store" / "w.safetensors";
    std::ofstream(target) << "old";
    fs::create_symlink("store/w.safetensors", t.dir / "hop2"); // relative, from its own folder
    fs::create_symlink(t.dir / "hop2", t.dir / "link");        // absolute, to another link
    const FileTarget f = file_target((t.dir / "link").string());
    EXPECT_EQ(fs::path(f.path), t.dir / "store" / "w.safetensors");
    EXPECT_FALSE(f.in_place);
    EXPECT_EQ(f.temporary(), f.path + ".tmp");
    // A link to a file not there yet: the file it names is created there.
    fs::create_symlink("store/new.json", t.dir / "dangling");
    EXPECT_EQ(fs::path(file_target((t.dir / "dangling").string()).path),
              t.dir / "store" / "new.json");
    // A plain path is itself.
    EXPECT_EQ(file_target((t.dir / "plain").string()).path, (t.dir / "plain").string());
}

TEST(FileTarget, WritesADeviceInPlace) {
    const FileTarget f = file_target("/dev/null");
    EXPECT_TRUE(f.in_place);
    EXPECT_EQ(f.temporary(), "/dev/null");
}

TEST(FileTarget, TheSafetensorsWritersReplaceWhatALinkNamesAndKeepTheLink) {
    TempDir t;
    const fs::path target = t.dir / "store" / "w.safetensors", link = t.dir / "w.safetensors";
    write_safetensors(target.string(), one_tensor(1.0f));
    fs::create_symlink("store/w.safetensors", link);
    write_safetensors(link.string(), one_tensor(2.0f));
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(first_value(target), 2.0f);
    {
        SafeTensorsWriter w(link.string(), {}, {{"w", DType::f32, {1}}});
        const float v = 3.0f;
        w.write(0, &v, 4);
        w.finish();
    }
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(first_value(target), 3.0f);
    EXPECT_FALSE(fs::exists(target.string() + ".tmp"));
    EXPECT_FALSE(fs::exists(link.string() + ".tmp"));
}

// A pipe stands for every device here: a test that wrote to /dev/null would, were the fix undone,
// replace the machine's /dev/null (CI runs as root).
TEST(FileTarget, TheSafetensorsWritersWriteAPipeInPlace) {
    TempDir t;
    const fs::path fifo = t.dir / "pipe";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_TRUE(file_target(fifo.string()).in_place);
    auto drained = [&] { // what a reader of the pipe receives, until the writer closes it
        return std::async(std::launch::async, [&] {
            std::ifstream in(fifo, std::ios::binary);
            return std::string(std::istreambuf_iterator<char>(in), {});
        });
    };
    auto got = drained();
    write_safetensors(fifo.string(), one_tensor(1.0f));
    const std::string bytes = got.get();
    std::istringstream as_file(bytes);
    float v = 0;
    std::memcpy(&v, read_safetensors(as_file, bytes.size(), "pipe").tensors.at(0).data.data(), 4);
    EXPECT_EQ(v, 1.0f);
    // The streamed writer seeks, which a pipe cannot: an error, and the pipe is left as it was.
    got = drained();
    EXPECT_THROW(
        {
            SafeTensorsWriter w(fifo.string(), {}, {{"w", DType::f32, {1}}});
            w.write(0, &v, 4);
            w.finish();
        },
        Error);
    got.get();
    EXPECT_TRUE(fs::is_fifo(fifo));
    EXPECT_FALSE(fs::exists(fifo.string() + ".tmp"));
}

// is_within: the folder itself and anything under it, however named (a link into it, `..`), but
// not a sibling that merely shares the name's prefix.
TEST(FileTarget, IsWithinResolvesLinksAndDotDot) {
    TempDir t;
    const std::string run = (t.dir / "run").string();
    fs::create_directories(t.dir / "run" / "checkpoint");
    fs::create_directory_symlink(t.dir / "run" / "checkpoint", t.dir / "link");
    EXPECT_TRUE(is_within(run, run));
    EXPECT_TRUE(is_within(run + "/checkpoint/rank-0.bin", run));
    EXPECT_TRUE(is_within((t.dir / "link" / "meta.json").string(), run + "/checkpoint"));
    EXPECT_TRUE(is_within((t.dir / "store" / ".." / "run" / "x").string(), run));
    EXPECT_FALSE(is_within(run + "2/x", run));
    EXPECT_FALSE(is_within((t.dir / "store" / "x").string(), run));
}
