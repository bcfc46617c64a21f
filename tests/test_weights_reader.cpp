// WeightsReader (train --init): any element range of any unit reads the same values as loading
// the whole file, across tensor boundaries and in bf16; and it reads only that range — a NaN in
// a tensor outside it goes unseen, one inside it is refused naming the tensor and its element.
#include "core/error.h"
#include "model/gpt2/gpt_init.h"
#include "model/param_layout.h"
#include "model/safetensors.h"
#include "model/weights_io.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace shardlab;

namespace {

ModelConfig small_config() {
    ModelConfig c;
    c.vocab = 64, c.context = 8, c.layers = 2, c.hidden = 16, c.heads = 2, c.kv_heads = 2;
    return c;
}

std::string temp_file(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("shardlab_wr_" + std::to_string(::getpid()) + "_" + name))
        .string();
}

} // namespace

TEST(WeightsReader, EveryRangeReadsWhatLoadingTheWholeFileReads) {
    const ModelConfig c = small_config();
    for (DType t : {DType::f32, DType::bf16}) {
        const std::string path = temp_file(std::string("ranges_") + dtype_name(t));
        save_weights(path, ModelWeights{c, gpt2_init(ParamLayout(c), 3, c.layers)}, t);
        const ModelWeights whole = load_weights(path);
        WeightsReader reader(path);
        EXPECT_EQ(reader.config().hidden, c.hidden);
        const ParamLayout layout(c);
        for (std::size_t u = 0; u < layout.num_units(); ++u) {
            const std::uint64_t n = layout.units()[u].numel;
            // Odd cuts: they start and end inside tensors and span several.
            for (std::uint64_t begin : {std::uint64_t(0), n / 3, n - 1})
                for (std::uint64_t count : {std::uint64_t(1), n / 2 + 7, n}) {
                    if (begin + count > n) continue;
                    std::vector<float> got(count, -1.0f);
                    reader.read(int(u), begin, count, got.data());
                    for (std::uint64_t i = 0; i < count; ++i)
                        ASSERT_EQ(got[i], whole.units[u][begin + i])
                            << dtype_name(t) << " unit " << u << " element " << begin + i;
                }
        }
        std::filesystem::remove(path);
    }
}

TEST(WeightsReader, ReadsOnlyTheRangeAskedFor) {
    const ModelConfig c = small_config();
    const std::string path = temp_file("nan");
    SafeTensorsFile f;
    {
        save_weights(path, ModelWeights{c, gpt2_init(ParamLayout(c), 3, c.layers)}, DType::f32);
        f = read_safetensors(path);
    }
    // A NaN as element 5 of the last block's MLP weight (unit 2, far from unit 1).
    SafeTensor* t = nullptr;
    for (SafeTensor& x : f.tensors)
        if (x.name == "transformer.h.1.mlp.c_fc.weight") t = &x;
    ASSERT_NE(t, nullptr);
    const float nan = std::nanf("");
    std::memcpy(t->data.data() + 5 * sizeof(float), &nan, sizeof(float));
    write_safetensors(path, f);

    WeightsReader reader(path); // the header is fine: opening reads no tensor
    const ParamLayout layout(c);
    std::vector<float> unit1(layout.units()[1].numel);
    EXPECT_NO_THROW(reader.read(1, 0, unit1.size(), unit1.data())); // block 0: untouched
    std::vector<float> unit2(layout.units()[2].numel);
    try {
        reader.read(2, 0, unit2.size(), unit2.data());
        FAIL() << "a NaN in the range read was accepted";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("tensor 'transformer.h.1.mlp.c_fc.weight' holds nan "
                                             "at element 5"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(load_weights(path), UsageError); // loading the whole file sees it
    std::filesystem::remove(path);
}
