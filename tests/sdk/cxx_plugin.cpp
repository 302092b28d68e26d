/*
 * cxx_plugin.cpp - a plugin written in C++ against <twice/plugin.h>, as a
 * team with a C++ code base writes one: the descriptor through
 * TWICE_PLUGIN (C++20 designated initializers), a setting, init/fini with
 * C++ state, describe, handle with an error. check-cxx.py builds it with
 * -Wall -Wextra -Werror -pedantic and loads it as twiced does; a mangled
 * entry point or a warning in the SDK's macro fails that test.
 */
#include <string>

#include <twice/plugin.h>

namespace
{

struct state {
    const twice_api *api; // the host's table, valid for the plugin's life
    std::string greeting; // our copy: settings are valid in init() only
};

int
init(const twice_api *api, const twice_settings *settings, void **out)
{
    const char *g = api->setting(settings, "greeting");
    if (g == nullptr || *g == '\0') {
        api->setting_error(settings, "greeting", "must not be empty");
        return -1;
    }
    *out = new state{api, g};
    return 0;
}

void
fini(void *s)
{
    delete static_cast<state *>(s);
}

twice_status
handle(void *s, twice_job *job)
{
    const state *st = static_cast<const state *>(s);
    const twice_api *api = st->api;
    const char *name = api->field(job, "name", nullptr);
    if (name == nullptr) {
        api->error(job, "no name");
        return TWICE_REJECT;
    }
    std::string line = st->greeting + ", " + name;
    api->log(job, TWICE_LOG_INFO, "%s", line.c_str());
    return TWICE_DONE;
}

int
describe(const twice_api *, const twice_settings *, char *buf, size_t cap)
{
    std::string text = "greets the message's name in C++";
    text.copy(buf, cap - 1);
    buf[text.size() < cap ? text.size() : cap - 1] = '\0';
    return 0;
}

const twice_setting settings[] = {
    {"greeting", TWICE_SETTING_STRING, 0, "Hello", "what to say"},
    {nullptr, TWICE_SETTING_STRING, 0, nullptr, nullptr},
};

} // namespace

TWICE_PLUGIN(.name = "cxx", .version = "1.0.0", .key_template = "cxx:{id}", .settings = settings,
             .init = init, .handle = handle, .fini = fini, .describe = describe)
