/*
 * test-key-texts.c - the text of an idempotency key made from a JSON number,
 * pinned. Keys are stored in production databases: a number that spells a
 * different key after an upgrade would run a completed job again. So every
 * number below keeps the key text it had when this table was written
 * (jansson's reading: integers in decimal, reals in the shortest form that
 * reads back the same), whatever parser twice uses. Checked through the
 * SDK's mock host, which derives keys with the daemon's own code
 * (test-mock-keys checks that the two agree); and again after a plugin put
 * a locale with a decimal comma in force (setlocale), which must not change
 * a key (test-locale.c checks the daemon's side).
 */
#include "check.h"
#include "comma_locale.h"

#include <stdio.h>
#include <string.h>
#include <twice/mock.h>

static const struct {
    const char *number; /* as the producer wrote it */
    const char *key;    /* the key text of {v} */
} pinned[] = {
    {"0", "0"},
    {"-0", "0"},
    {"7", "7"},
    {"-7", "-7"},
    {"42", "42"},
    {"10", "10"},
    {"100", "100"},
    {"9007199254740993", "9007199254740993"},
    {"9223372036854775807", "9223372036854775807"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"0.0", "0"},
    {"-0.0", "-0"},
    {"0.1", "0.1"},
    {"1.0", "1"},
    {"1.50", "1.5"},
    {"2.5", "2.5"},
    {"19.99", "19.99"},
    {"-19.99", "-19.99"},
    {"0.30000000000000004", "0.30000000000000004"},
    {"123456789.125", "123456789.125"},
    {"3.14159265358979323846", "3.141592653589793"},
    {"1.7976931348623157e308", "1.7976931348623157e+308"},
    {"5e-324", "5e-324"},
    {"4.9e-324", "5e-324"},
    {"1e-400", "0"},
    {"2.2250738585072014e-308", "2.2250738585072014e-308"},
    {"20", "20"},
    {"20.0", "2e+01"}, /* not "20": README, "an integer and a real are spelt apart" */
    {"1e2", "1e+02"},
    {"1E2", "1e+02"},
    {"1e+2", "1e+02"},
    {"1E-2", "0.01"},
    {"-2.5e-8", "-2.5e-08"},
    {"1e300", "1e+300"},
    {"1e21", "1e+21"},
    {"1e22", "1e+22"},
    {"1e16", "1e+16"},
    {"1e15", "1e+15"},
    {"123456789e3", "1.23456789e+11"},
    {"1.5e3", "1.5e+03"},
    {"0e0", "0"},
    {"-0e0", "-0"},
    {"1e0", "1"},
    {"-1e-7", "-1e-07"},
    {"12345678901234567e0", "12345678901234568"},
    {"1234567890123456789.0", "1.2345678901234568e+18"},
    {"9007199254740993.0", "9007199254740992"},
    {"100000000000000000000.0", "1e+20"},
    {"0.000001", "1e-06"},
    {"0.0000001", "1e-07"},
    {"1e-5", "1e-05"},
};

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

/* The key of template tmpl for body, or its error text. */
static void
key_of(twice_mock *m, const char *body, const char *tmpl, char *key, size_t cap)
{
    char err[512] = "";
    twice_mock_job *j = twice_mock_job_new(m, body);
    CHECK(j != NULL);
    if (j == NULL) {
        snprintf(key, cap, "<no job>");
        return;
    }
    if (twice_mock_expand_key(j, tmpl, key, cap, err, sizeof(err)) < 0) {
        snprintf(key, cap, "<refused: %s>", err);
    }
    twice_mock_job_free(j);
}

static void
test_pinned_numbers(twice_mock *m)
{
    char body[256], key[TWICE_KEY_MAX + 1];
    for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
        /* alone, nested in an array, and with other members around it */
        snprintf(body, sizeof(body), "{\"v\":%s}", pinned[i].number);
        key_of(m, body, "{v}", key, sizeof(key));
        CHECK_STR(key, pinned[i].key);
        snprintf(body, sizeof(body), "{\"a\":[true,{\"v\": %s }],\"z\":1.5}", pinned[i].number);
        key_of(m, body, "k:{a.1.v}", key, sizeof(key));
        CHECK(strncmp(key, "k:", 2) == 0);
        CHECK_STR(key + 2, pinned[i].key);
    }
}

int
main(void)
{
    twice_plugin d = {.magic = TWICE_ABI_MAGIC,
                      .abi_major = TWICE_ABI_MAJOR,
                      .abi_minor = TWICE_ABI_MINOR,
                      .size = (uint32_t) sizeof(twice_plugin),
                      .name = "pin",
                      .version = "1",
                      .key_template = "k:{v}",
                      .handle = handle};
    twice_mock *m = twice_mock_new(&d);
    CHECK(m != NULL);
    if (m != NULL) {
        test_pinned_numbers(m);
        if (comma_locale_set() == 0) {
            test_pinned_numbers(m);
        } else {
            CHECK(!"a locale with a decimal comma");
        }
        twice_mock_free(m);
    }
    return check_done("test-key-texts");
}
