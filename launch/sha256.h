// SHA-256 fed piece by piece (OpenSSL's EVP): the final weights are hashed unit by unit as they
// are gathered, the training data in one call.
#pragma once

#include <cstddef>
#include <string>

namespace shardlab {

class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(const void* data, std::size_t bytes);
    std::string hex(); // the digest as lowercase hex; call once, last
  private:
    void* ctx_; // EVP_MD_CTX, kept out of this header
};

} // namespace shardlab
