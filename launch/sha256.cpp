// OpenSSL's digest API behind a small class.
#include "launch/sha256.h"

#include <fmt/format.h>
#include <openssl/evp.h>

namespace shardlab {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
    EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}

Sha256::~Sha256() {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}

void Sha256::update(const void* data, std::size_t bytes) {
    EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, bytes);
}

std::string Sha256::hex() {
    unsigned char md[32];
    unsigned int len = 0;
    EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
    std::string out;
    for (unsigned i = 0; i < len; ++i) out += fmt::format("{:02x}", md[i]);
    return out;
}

} // namespace shardlab
