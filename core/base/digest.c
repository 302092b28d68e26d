/*
 * digest.c - the digests of digest.h: algorithms fetched once (pthread_once)
 * and kept for the life of the process, one digest context per thread.
 */
#include "digest.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

static EVP_MD *sha256_md, *md5_md; /* NULL when the provider has none */
static pthread_key_t ctx_key;      /* the calling thread's EVP_MD_CTX */
static int have_ctx_key;
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;

static void
free_ctx(void *ctx)
{
    EVP_MD_CTX_free(ctx);
}

static void
fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    md5_md = EVP_MD_fetch(NULL, "MD5", NULL);
    have_ctx_key = pthread_key_create(&ctx_key, free_ctx) == 0;
}

/* The calling thread's digest context, made on its first digest and freed
 * when the thread exits: a context per call (EVP_Digest) costs an
 * allocation and the provider's context set-up every time. NULL on ENOMEM
 * or without a thread key (the caller makes its own then). */
static EVP_MD_CTX *
thread_ctx(void)
{
    if (!have_ctx_key) {
        return NULL;
    }
    EVP_MD_CTX *ctx = pthread_getspecific(ctx_key);
    if (ctx == NULL && (ctx = EVP_MD_CTX_new()) != NULL &&
        pthread_setspecific(ctx_key, ctx) != 0) {
        EVP_MD_CTX_free(ctx);
        ctx = NULL;
    }
    return ctx;
}

/* data's digest with md into buf; 1 on success, as EVP_Digest. */
static int
digest_run(const EVP_MD *md, const void *data, size_t n, unsigned char *buf, unsigned int *len)
{
    EVP_MD_CTX *ctx = thread_ctx();
    if (ctx == NULL) {
        return EVP_Digest(data, n, buf, len, md, NULL);
    }
    return EVP_DigestInit_ex2(ctx, md, NULL) == 1 && EVP_DigestUpdate(ctx, data, n) == 1 &&
           EVP_DigestFinal_ex(ctx, buf, len) == 1;
}

/* data's digest with md, of want bytes, into out. */
static int
digest(const EVP_MD *md, const void *data, size_t n, unsigned char *out, unsigned int want)
{
    unsigned char buf[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (md == NULL || digest_run(md, data, n, buf, &len) != 1 || len != want) {
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
