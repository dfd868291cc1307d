/* stat.h - what the files of sr-stat share: main.c (options, the run),
 * snapshot.c (the records, the account alerts), prom.c (--prom),
 * table.c (--table), watch.c (--watch). */
#ifndef STAT_H
#define STAT_H
#include <stdio.h>

#include "sr.h"

/* main.c */
extern struct sr_config cfg;
extern struct sr_redis rds;
extern int status; /* the exit: SR_EX_BACKEND once an alert could not be written */
extern int unread; /* figures Redis refused to give: srq_up 0, exit 3 */

/* snapshot.c */
/* Every account's figures (or those named), the devices' queue, and the
 * total ("carrier":"*", last), as records; with alerts, the account alerts
 * raised or resolved; now_ms: the Redis clock when it was read. */
json_t *snapshot(const char **named, int nnamed, long window_s, int alerts, long long *now_ms);

/* prom.c: the records in Prometheus text format. */
void write_prom(FILE *f, json_t *records, long long now_ms);

/* table.c: the records as a table for people. */
void write_table(FILE *f, json_t *records, long long now_ms);

/* watch.c: --watch, the table every interval_s until SIGINT or SIGTERM. */
void watch(const char **carriers, int ncarriers, long window_s, long interval_s);
#endif
