/*
 * hello.c - the smallest useful twice plugin, for the SDK documentation:
 * a key template, one setting, init/handle/fini, logging and an error.
 * It greets the `name` of each message in the log; it does nothing else.
 *
 * Build it out of tree (one exported symbol, twice_plugin_entry):
 *
 *     cc -shared -fPIC -fvisibility=hidden \
 *        $(pkg-config --cflags twice-plugin) -o hello.so hello.c
 *
 * and name it in twice.conf:
 *
 *     plugins = ( { name = "hello"; path = "/opt/hello/hello.so";
 *                   settings = { greeting = "Hi"; }; } );
 *
 * It builds as strict C too (-std=c11 -pedantic -Wall -Wextra -Werror):
 * strdup() is POSIX, not ISO C, hence the feature macro before any header.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include <twice/plugin.h>

/* Plugin state, made by init() and freed by fini(). handle() runs on many
 * threads at once, so after init() it is only ever read. */
struct hello {
    const twice_api *api; /* the host's table: valid for the plugin's life */
    char *greeting;       /* our own copy: settings are only valid in init() */
};

static int
hello_init(const twice_api *api, const twice_settings *settings, void **state)
{
    /* Never NULL here: the setting has a default in the declaration below.
     * A value the plugin cannot use is reported at its line of twice.conf. */
    const char *greeting = api->setting(settings, "greeting");
    if (greeting[0] == '\0') {
        api->setting_error(settings, "greeting", "must not be empty");
        return -1;
    }
    struct hello *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "out of memory");
        return -1;
    }
    h->api = api;
    h->greeting = strdup(greeting);
    if (h->greeting == NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "out of memory");
        free(h);
        return -1;
    }
    *state = h;
    return 0;
}

/*
 * One job. The host has already derived its key ("hello:<id>") and claimed
 * it, so a duplicate message never gets here. Everything the api returns
 * is borrowed until this function returns.
 */
static twice_status
hello_handle(void *state, twice_job *job)
{
    struct hello *h = state;
    const char *name = h->api->field(job, "name", NULL);
    if (name == NULL) {
        /* Permanent: retrying cannot add a name. The text goes to the DLQ. */
        h->api->error(job, "message has no name");
        return TWICE_REJECT;
    }
    /* The host prefixes the plugin's name, the key and the message id. */
    h->api->log(job, TWICE_LOG_INFO, "%s, %s!", h->greeting, name);
    return TWICE_DONE;
}

static void
hello_fini(void *state)
{
    struct hello *h = state;
    free(h->greeting);
    free(h);
}

/* What twice.conf may set for this plugin; the host checks it before init. */
static const twice_setting hello_settings[] = {
    {"greeting", TWICE_SETTING_STRING, 0, "Hello", "the word before the name"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

/* The key names the message's intent: greeting person 42 twice is one
 * greeting, whatever the SQS MessageId of the second copy. */
TWICE_PLUGIN(.name = "hello", .version = "1.0.0", .key_template = "hello:{id}",
             .settings = hello_settings, .init = hello_init, .handle = hello_handle,
             .fini = hello_fini)
