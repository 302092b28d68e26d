/*
 * twicectl.c - the operator CLI's entry point: global options (-c FILE,
 * --json, --help, --version) and the table of subcommands. What each
 * subcommand does lives in its own ctl_*.c file; nothing here talks to SQS
 * or PostgreSQL.
 */
#include "config.h"
#include "ctl.h"
#include "idem.h"
#include "version.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <twice/plugin.h>

struct command {
    const char *name;
    int (*run)(struct ctl *c, int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"send", ctl_send, "send a message to a queue"},
    {"dlq", ctl_dlq, "list, redrive, delete or purge a queue's dead letters"},
    {"key", ctl_key, "show, list, forget or derive idempotency keys"},
    {"outbox", ctl_outbox, "list, retry or delete follow-up messages staged with send()"},
    {"plugin", ctl_plugin, "check a plugin file: load rule, descriptor, settings"},
    {"status", ctl_status, "messages visible, in flight, delayed and dead, per queue"},
    {"whoami", ctl_whoami, "which AWS credentials and region twicectl would use"},
    {"pause", ctl_pause, "stop every host receiving from a queue, for a while or until resumed"},
    {"resume", ctl_resume, "let every host receive from a paused queue again"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: twicectl [-c FILE] [--json] [--timeout SECONDS] COMMAND [ARGS...]\n"
            "       twicectl help COMMAND | --help | --version\n\n"
            "Operate twice: the configuration is the one twiced reads\n"
            "(-c FILE, default " TWICE_DEFAULT_CONFIG ").\n"
            "--timeout bounds each call to SQS, retries included (default %d s).\n\n"
            "commands:\n",
            CTL_DEFAULT_TIMEOUT);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(out, "\n'twicectl COMMAND --help' tells more. Exit codes: 0 success, 1 failure (the "
                 "reason is\nprinted), 2 usage error.\n");
}

static const struct command *
find(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

/* `twicectl help [COMMAND [SUB]]`: the command's own --help. */
static int
help(struct ctl *c, int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return CTL_OK;
    }
    const struct command *cmd = find(argv[1]);
    if (cmd == NULL) {
        char shown[CTL_ARG_SIZE];
        fprintf(stderr, "twicectl: help: no command '%s'\n", ctl_arg(shown, argv[1]));
        usage(stderr);
        return CTL_USAGE;
    }
    char *args[4] = {argv[1], NULL, NULL, NULL};
    int n = 1;
    if (argc > 2) {
        args[n++] = argv[2];
    }
    args[n++] = "--help";
    optind = 0;
    return cmd->run(c, n, args);
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},  {"json", no_argument, NULL, 'J'},
        {"timeout", required_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},       {NULL, 0, NULL, 0},
    };
    struct ctl c;
    memset(&c, 0, sizeof(c));
    config_set_dsn_check(idem_dsn_parses);
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "+:c:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            c.config_path = optarg;
            break;
        case 'J':
            c.json = 1;
            break;
        case 'T': {
            char *end = NULL;
            long s = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || s < 1 || s > CTL_MAX_TIMEOUT) {
                char shown[CTL_ARG_SIZE];
                fprintf(stderr, "twicectl: --timeout: expected seconds from 1 to %d, got '%s'\n",
                        CTL_MAX_TIMEOUT, ctl_arg(shown, optarg));
                return CTL_USAGE;
            }
            c.timeout_ms = s * 1000L;
            break;
        }
        case 'h':
            usage(stdout);
            return CTL_OK;
        case 'V':
            printf("twicectl %s (plugin ABI %d.%d)\n", TWICE_VERSION, TWICE_ABI_MAJOR,
                   TWICE_ABI_MINOR);
            return CTL_OK;
        case ':':
            fprintf(stderr, "twicectl: %s needs a value\n", argv[optind - 1]);
            return CTL_USAGE;
        default:
            fprintf(stderr, "twicectl: unknown option %s\n", argv[optind - 1]);
            usage(stderr);
            return CTL_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CTL_USAGE;
    }
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    int rc;
    const struct command *cmd = find(sub_argv[0]);
    if (strcmp(sub_argv[0], "help") == 0) {
        rc = help(&c, sub_argc, sub_argv);
    } else if (cmd == NULL) {
        char shown[CTL_ARG_SIZE];
        fprintf(stderr, "twicectl: no command '%s'\n", ctl_arg(shown, sub_argv[0]));
        usage(stderr);
        rc = CTL_USAGE;
    } else {
        optind = 0; /* the subcommand parses its own options from a fresh start */
        rc = cmd->run(&c, sub_argc, sub_argv);
    }
    ctl_close(&c);
    return rc;
}
