/*
 * config_check.h - the special checks that rows of the settings table name
 * (config_table.c): what a type and a range cannot say about a setting, and
 * the hooks of the plugin, queue and route lists. Only the table uses them.
 */
#ifndef TWICE_CONFIG_CHECK_H
#define TWICE_CONFIG_CHECK_H

#include "config_row.h"

/* Settings of the top level and its groups. */
/* A path without a leading / is made absolute from the configuration's directory. */
config_check_fn config_check_rel_path;
config_check_fn config_check_user;
config_check_fn config_check_pid_file;
config_check_fn config_check_log_file;
config_check_fn config_check_ca_file;
config_check_fn config_check_http_url;
config_check_fn config_check_sqs_endpoint;
config_check_fn config_check_s3_endpoint;
config_check_fn config_check_region;
config_check_fn config_check_queue_dlq_url;
config_check_fn config_check_dsn;
config_check_fn config_check_table;
config_check_fn config_check_header;
config_check_fn config_check_smtp_url;
/* alerts.smtp.from and each of .to: an address SMTP takes (mailaddr.h). */
config_check_fn config_check_mail_from;
config_check_fn config_check_mail_to;
config_check_fn config_check_listen;
config_check_fn config_check_queues;

/* plugins: entries, names, files and their own settings. */
config_entry_fn config_plugin_begin;
config_free_fn config_plugin_free;
config_check_fn config_check_plugin_name;
config_check_fn config_check_plugin_path;
config_parse_fn config_parse_plugin_settings;
config_free_fn config_free_plugin_settings;

/* queues and their routes. */
config_entry_fn config_queue_begin;
config_free_fn config_queue_free;
config_check_fn config_queue_check;
config_check_fn config_check_queue_key;
config_check_fn config_check_queue_name;
config_check_fn config_check_queue_url;
config_check_fn config_check_queue_plugin;
config_check_fn config_check_route_by;
config_check_fn config_check_routes;
config_check_fn config_check_backoff;
config_check_fn config_check_max_receives;
config_check_fn config_check_max_inflight;
config_entry_fn config_route_begin;
config_check_fn config_check_route_value;
config_check_fn config_check_route_plugin;

/* rate_limit (a plugin's, a queue's): per_second given; burst defaults to it. */
config_check_fn config_check_plugin_rate;
config_check_fn config_check_queue_rate;

/* queues.breaker.failures: at least 1 when the group is given (0 is the
 * default of a queue without a breaker). */
int config_check_breaker(struct config_at *at);

#endif
