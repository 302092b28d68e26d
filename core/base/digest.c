/*
 * digest.c - the digests of digest.h: EVP_Digest with algorithms fetched
 * once (pthread_once) and kept for the life of the process.
 */
#include "digest.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

static EVP_MD *sha256_md, *md5_md; /* NULL when the provider has none */
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;

static void
fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    md5_md = EVP_MD_fetch(NULL, "MD5", NULL);
}

/* data's digest with md, of want bytes, into out. */
static int
digest(const EVP_MD *md, const void *data, size_t n, unsigned char *out, unsigned int want)
{
    unsigned char buf[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (md == NULL || EVP_Digest(data, n, buf, &len, md, NULL) != 1 || len != want) {
        memset(out, 0, want);
        return -1;
    }
    memcpy(out, buf, want);
    return 0;
}

int
digest_sha256(const void *data, size_t n, unsigned char out[32])
{
    pthread_once(&fetch_once, fetch);
    return digest(sha256_md, data, n, out, 32);
}

int
digest_md5(const void *data, size_t n, unsigned char out[16])
{
    pthread_once(&fetch_once, fetch);
    return digest(md5_md, data, n, out, 16);
}
