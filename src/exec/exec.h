/* exec.h - what the files of sr-exec share: a task in flight (struct item),
 * the run's state, and each file's functions. main.c reads the tasks and
 * runs the loop; judge.c judges them again with fresh facts; gate.c asks
 * the gate for their slots; schedule.c sends them when due and reaps the
 * calls; result.c prints each one's result line. */
#ifndef EXEC_H
#define EXEC_H

#include "sr.h"

/* How far ahead the gate may grant a slot: the call is held until then.
 * A slot granted ahead hides the gate's round trip; but a task of a higher
 * lane arriving meanwhile waits behind the call that holds it. So a status
 * query, a retry and a paying user's call take theirs up to one of the
 * account's slots ahead (1000 / qps ms, within these bounds), and normal
 * and bulk work only SLOT_AHEAD_MIN_MS ahead: under a stream of due queries
 * a bulk call slipping into a gap would put every later query a slot late. */
#define SLOT_AHEAD_MS 200
#define SLOT_AHEAD_MIN_MS 20
/* How old a judgment may be when its item is gated: one older is made again
 * first (the facts may have changed while the item waited for a slot). */
#define JUDGED_MAX_MS 100

enum { IT_NEW, IT_READY, IT_WAIT, IT_HOLD, IT_CALL, IT_DONE };

struct item {
	int state;
	json_t *obj;  /* the task line, echoed in the result */
	struct sr_task t;
	struct sr_call call;
	struct sr_edge *edge;
	int64_t wake;     /* IT_WAIT: when to try the gate again; IT_HOLD: when to send (mono ms) */
	long long at;     /* the slot the gate granted (Redis ms) */
	int resend;       /* sent again after a re-authentication */
	int judged;       /* re-judged: no longer wanted, finished by the gate without a call */
	long long gated;  /* when the gate granted the slot (Redis ms) */
	int64_t judged_at; /* when its facts were read (mono ms) */
	struct item *next;
};

/* The run (main.c). */
extern struct sr_config cfg;
extern struct sr_redis rds;
extern struct sr_gateway *gw;
extern struct sr_clocks clocks; /* Redis's clock against ours: its steps */
extern struct item *items; /* lane order, then claim order (queue_item) */
extern int nitems, nheld, redis_up, status;
extern int freed; /* calls finished since the last scheduling step */
/* SRQ_TEST_SEND_DELAY_MS: tests only, see where a held call is sent. */
extern long send_delay_ms;

/* Asking the gate for a slot for each item, one script call per account's
 * items (up to GATE_BATCH): its state is read and written once for them
 * all. Items that pass are held until their slot. The calls are appended
 * (gate_append), to go out with the re-judgment's reads of the new items,
 * then their replies read (gate_read), then with SRQ_WAIT_REPLICAS the
 * passes confirmed (gate_end), once every reply of the round is in. */
#define GATE_BATCH 256
struct gating {
	struct item **order; /* the items, grouped by script call */
	int *group, *node, ngroups, read;
	unsigned *gen;
	int *asked;          /* an HGET of the account's saved clock before its call */
	int64_t sent;        /* mono ms before the round was sent */
};

/* result.c */
void emit_result(struct item *it, const char *outcome, const char *error);
void result_error(struct item *it, const char *error);
void blocked(struct item *it, const char *why, const char *error);
int gateway_verdict(void);
/* judge.c */
void rejudge_append(struct item **batch, int n);
int rejudge_read(struct item **batch, int n, int64_t sent);
/* gate.c */
void gate_append(struct gating *g, struct item **batch, int n);
int gate_read(struct gating *g);
void gate_end(struct gating *g, int lost);
/* schedule.c */
int64_t schedule(void);
void reap(void);

#endif
