/* sweep.h - what the files of sr-sweep share. main.c runs the sweep and
 * trims the audit; cards.c sweeps each card and device (their scripts) and
 * the buckets cards sleep in; keys.c checks the type of every key an
 * account or the deployment shares, and finds accounts gone from the list. */
#ifndef SWEEP_H
#define SWEEP_H

#include "sr.h"

extern struct sr_config cfg;
extern struct sr_redis rds;
extern long sweep_failed; /* ids whose sweep script Redis refused */
extern long keys_left;    /* damaged keys reported, not repaired */
extern long grace_high, grace_normal, grace_bulk, grace_device; /* cards.c */

struct sweep {
	const char *carrier;
	char **ids;
	size_t n, cap;
	long findings;
	struct buckets {
		char **heads; /* the account's idle or wait buckets, by HEAD */
		size_t n, cap;
	} idle, wait;
};

/* main.c */
redisReply *accounts(void);
/* cards.c */
void push_str(char ***list, size_t *n, size_t *cap, const char *s);
void free_strs(char ***list, size_t *n, size_t *cap);
void collect_id(const char *id, void *arg);
void collect_key(const char *rest, void *arg);
void report(const char *finding, const char *kind, const char *id, const char *carrier);
int cmp_str(const void *a, const void *b);
void sweep_ids(struct sweep *w, int device, int shard);
long check_buckets(struct sweep *w, struct buckets *b, const char *kind);
/* keys.c */
void key_types(char (*keys)[SR_KEY_MAX], size_t n, char (*types)[16]);
int move_aside(const char *key, const char *want, json_t *o, int64_t *now);
long check_account_keys(const char *carrier);
void check_global_keys(void);
long list_lost_accounts(void);

#endif
