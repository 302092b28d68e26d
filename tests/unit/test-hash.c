/*
 * test-hash.c - FNV-1a 64 (hash.h): the published test vectors, continuing
 * over a second string, and the advisory lock keys built on it, which must
 * not change between versions (a rolling upgrade's migrations take the same
 * lock).
 */
#include "check.h"
#include "hash.h"
#include "idem_internal.h"

static void
test_vectors(void)
{
    CHECK(hash_fnv1a(HASH_FNV1A_INIT, "") == UINT64_C(0xcbf29ce484222325));
    CHECK(hash_fnv1a(HASH_FNV1A_INIT, "a") == UINT64_C(0xaf63dc4c8601ec8c));
    CHECK(hash_fnv1a(HASH_FNV1A_INIT, "foobar") == UINT64_C(0x85944171f73967e8));
    CHECK(hash_fnv1a(hash_fnv1a(HASH_FNV1A_INIT, "foo"), "bar") ==
          hash_fnv1a(HASH_FNV1A_INIT, "foobar"));
}

static void
test_lock_keys_unchanged(void)
{
    /* The values every twiced since the lock was introduced computes. */
    CHECK(idem_lock_key("twice:idem:", "twice_idempotency") == 6372480126783500966LL);
    CHECK(idem_lock_key("twice:outbox:", "twice_outbox") == 3961475911885642586LL);
}

int
main(void)
{
    test_vectors();
    test_lock_keys_unchanged();
    return check_done("test-hash");
}
