/* asset.h - what the files of sr-asset share: main.c (options, reading
 * and answering the rows), batch.c (a batch of rows into Redis). */
#ifndef ASSET_H
#define ASSET_H
#include "sr.h"

#define BATCH 2048 /* rows a batch */

/* A row: pending until Redis answered for it, or refused it. */
enum { ST_PENDING, ST_REJECTED, ST_ERROR, ST_DONE };

/* One input row and what became of it (its result line). */
struct row {
	long line;
	int st;
	char error[200];
	json_t *obj;
	const char *card, *carrier, *device; /* borrowed from obj */
	char old_carrier[65], old_device[65];
	char from_device[65]; /* the card's device in Redis before this batch */
	int moves;       /* it leaves another device: its device fact is written last */
	int stale_device; /* its device fact is older than the stored one: no move */
	int joined;      /* its card was added to its device's members */
	long long as_of; /* when its facts were true, ms ("as_of", else --as-of); 0: now */
	long long device_as_of; /* the stored device fact's time */
	json_t *stale;   /* its facts not written: the stored ones are newer */
	int fw;   /* its facts' write in writes (append_facts), + 1; 0: none */
	int ncmd; /* membership writes appended for this row: their replies are its answer too */
};

/* main.c */
extern struct sr_config cfg;
extern struct sr_redis rds;
extern int redis_up;

/* batch.c */
extern struct sr_facts_batch writes; /* the batch's facts writes (facts_write.lua), in flight */
/* The batch's pending rows into Redis, in three pipelined rounds: each row
 * ends ST_DONE, ST_REJECTED or ST_ERROR. -1: Redis lost (the rows not
 * answered: fail_batch). */
int process(struct row *rows, int n);
/* Every pending row of the batch: ST_ERROR, with Redis's error. */
void fail_batch(struct row *rows, int n);
#endif
