// Owning pointers for OpenSSL's objects, and its error queue in words.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::tls {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};

using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES, GENERAL_NAMES_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE, X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX, X509_STORE_CTX_free>>;

// The reasons OpenSSL queued on this thread, oldest first, "; "-separated, and clears the queue;
// "unknown error" when it is empty.
std::string TakeErrors();

// kNotFound "WHAT PATH: cannot read it: REASON" unless this process can open `path` for reading;
// OpenSSL's own words for a missing file are less clear.
Status CheckReadable(const std::string& path, std::string_view what);

// Reads one PEM certificate or private key; nullptr (with TakeErrors() explaining) if the file
// holds none.
X509Ptr ReadCertificate(const std::string& path);
PkeyPtr ReadPrivateKey(const std::string& path);

// "DNS:localhost, IP:127.0.0.1": the subjectAltName entries of `cert`, as OpenSSL prints them.
std::string SubjectAltNames(X509* cert);

}  // namespace cohort::tls
