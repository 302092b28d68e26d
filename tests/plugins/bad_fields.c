/*
 * bad_fields.c - fixture: well-versioned descriptors with one content
 * mistake each (name, flags, key, key setting, settings declaration), chosen at entry
 * time by the environment variable TWICE_BAD_FIELDS, so one library
 * covers every rule loader_open applies after the load rule. Unset: valid.
 * Used by: test-loader.c.
 */
#include <twice/plugin.h>

#include <stdlib.h>
#include <string.h>

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

static int
derive_key(void *state, const twice_job *job, char *buf, size_t cap)
{
    (void) state;
    (void) job;
    (void) buf;
    (void) cap;
    return -1;
}

#define S_END                                                                                     \
    {                                                                                             \
        0, TWICE_SETTING_STRING, 0, 0, 0                                                          \
    }
static const twice_setting bad_name[] = {{"9lives", TWICE_SETTING_STRING, 0, 0, 0}, S_END};
static const twice_setting bad_type[] = {{"x", (twice_setting_type) 7, 0, 0, 0}, S_END};
static const twice_setting bad_int[] = {{"n", TWICE_SETTING_INT, 0, "ten", 0}, S_END};
static const twice_setting bad_bool[] = {{"b", TWICE_SETTING_BOOL, 0, "yes", 0}, S_END};
static const twice_setting dup[] = {
    {"a", TWICE_SETTING_STRING, 0, 0, 0}, {"a", TWICE_SETTING_INT, 0, 0, 0}, S_END};
static const twice_setting req_def[] = {{"r", TWICE_SETTING_STRING, 1, "x", 0}, S_END};
static const twice_setting key_decl[] = {
    {"key", TWICE_SETTING_STRING, 0, 0, 0}, {"n", TWICE_SETTING_INT, 0, 0, 0}, S_END};
static const twice_setting key_bad_default[] = {{"key", TWICE_SETTING_STRING, 0, "k:{", 0}, S_END};

/* A descriptor named n with key template k and further fields. */
#define D(n, k, ...)                                                                              \
    {                                                                                             \
        .magic = TWICE_ABI_MAGIC, .abi_major = TWICE_ABI_MAJOR, .abi_minor = TWICE_ABI_MINOR,     \
        .size = sizeof(twice_plugin), .name = n, .key_template = k, .handle = handle, __VA_ARGS__ \
    }
#define KEY "f:{id}"

static const struct variant {
    const char *name;
    twice_plugin d;
} variants[] = {
    {"name_upper", D("Bad", KEY)},
    {"name_empty", D("", KEY)},
    {"name_null", D(0, KEY)},
    {"name_long", D("a1234567890123456789012345678901234567890123456789012345678901234", KEY)},
    {"name_ctrl", D("a\nb", KEY)},
    {"flags", D("bad_fields", KEY, .flags = 0x80)},
    {"both", D("bad_fields", KEY, .derive_key = derive_key)},
    {"neither", D("bad_fields", 0)},
    {"setting_name", D("bad_fields", KEY, .settings = bad_name)},
    {"setting_type", D("bad_fields", KEY, .settings = bad_type)},
    {"setting_int", D("bad_fields", KEY, .settings = bad_int)},
    {"setting_bool", D("bad_fields", KEY, .settings = bad_bool)},
    {"setting_dup", D("bad_fields", KEY, .settings = dup)},
    {"setting_required_default", D("bad_fields", KEY, .settings = req_def)},
    {"derive_only", D("bad_fields", 0, .derive_key = derive_key)},
    {"transactional", D("bad_fields", KEY, .flags = TWICE_FLAG_TRANSACTIONAL)},
    {"template_ctrl", D("bad_fields", "k\x1b{")},
    {"key_setting", D("bad_fields", 0, .settings = key_decl, .key_setting = "key")},
    {"key_setting_and_template", D("bad_fields", KEY, .settings = key_decl, .key_setting = "key")},
    {"key_setting_undeclared", D("bad_fields", 0, .settings = key_decl, .key_setting = "kye")},
    {"key_setting_int", D("bad_fields", 0, .settings = key_decl, .key_setting = "n")},
    {"key_setting_bad_default",
     D("bad_fields", 0, .settings = key_bad_default, .key_setting = "key")},
};

static const twice_plugin valid = D("bad_fields", KEY, .version = "1.0.0");

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    const char *which = getenv("TWICE_BAD_FIELDS");
    for (size_t i = 0; which != 0 && i < sizeof(variants) / sizeof(variants[0]); i++) {
        if (strcmp(which, variants[i].name) == 0) {
            return &variants[i].d;
        }
    }
    return &valid;
}
