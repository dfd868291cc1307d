/* sr_command.h - the API of sr_command.c. */
#ifndef SR_COMMAND_H
#define SR_COMMAND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_judge.h"
#include "sr_redis.h"

/* sr-claim, sr-stat, sr-sweep and sr-admin find accounts in P:accounts:
 * every account srq writes for is added there, once per process (an SADD
 * appended to r; 1 if one was). */
int sr_account_register(struct sr_redis *r, const struct sr_config *cfg, const char *carrier);
/* Redis refused that SADD: the next sr_account_register sends it again. */
void sr_account_forget(const char *carrier);

/* One card's judged intent, written by enqueue.lua (the only writer of
 * commands: sr-enqueue and dev-eval both go through here). */
#define SR_CMD_GROUP 256 /* cards per script call */
struct sr_cmd {
	const char *card, *carrier, *scene, *source;
	int prio;
	struct sr_judgment j;
	/* out: status queued|unchanged|cancelled|noop, or NULL and error set */
	const char *status;
	long long ver;
	char error[160];
	/* out: its account's registration refused (no claim finds it until a
	 * later request, or sr-sweep, registers the account), or "" */
	char warning[160];
};
struct sr_cmd_calls;
/* Append the script calls for n commands (pipelined, not flushed). The
 * returned handle is consumed by sr_cmds_collect. */
struct sr_cmd_calls *sr_cmds_append(struct sr_redis *r, const struct sr_config *cfg,
    struct sr_cmd **cmds, int n);
/* Read the replies, fill status/ver (or error) of each command, free the
 * handle. -1 when the connection failed (commands left without status). */
int sr_cmds_collect(struct sr_redis *r, struct sr_cmd_calls *c);
/* Add status, action, reason and ver of a written command to an ack. */
void sr_cmd_ack(json_t *o, const struct sr_cmd *m);

#endif
