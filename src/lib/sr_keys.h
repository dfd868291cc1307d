/* sr_keys.h - the API of sr_keys.c. */
#ifndef SR_KEYS_H
#define SR_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

/* Key names (docs/redis.md: Redis layout). Every key of a card's command carries its
 * account as the hash tag, so each script touches one slot. Results are
 * written into buf (size SR_KEY_MAX) and returned. */
#define SR_KEY_MAX 256
char *sr_key_account(char *buf, const char *prefix, const char *carrier, const char *suffix);
/* A script's account keys, one per suffix (NULL-terminated): argv[i] =
 * keys[i] = the account's key named suffixes[i]. Returns how many. */
int sr_keys_account(char (*keys)[SR_KEY_MAX], const char **argv, const char *prefix,
    const char *carrier, const char *const *suffixes);
/* The same for a script's keys as its header declares them, shapes its
 * generated table (sr_lua_NAME_keys, sr_lua_NAME_item_keys): an account's
 * keys by their suffix; a card's hash, idle and wait buckets ("card:*",
 * "idle:*", "wait:*") those of the card id; a device's evaluation keys and
 * lock those of the device id; the switch and the operators' audit stream.
 * A shape it can not name is a bug (abort). */
int sr_keys_script(char (*keys)[SR_KEY_MAX], const char **argv, const char *prefix,
    const char *carrier, const char *id, const char *const *shapes);
char *sr_key_card(char *buf, const char *prefix, const char *carrier, const char *card);
/* Where a card with no command sleeps (docs/redis.md "Redis layout"): its bucket
 * hash into buf; returns its field (the id's last two characters). The
 * packed value holds sr_idle_fields' values in order, '|' between them
 * (sr_idle_fields, enum sr_idle_field: generated from includes/idle.lua). */
const char *sr_key_idle(char *buf, const char *prefix, const char *carrier, const char *card);
/* The same from a card's command hash key; NULL if card_key is not one. */
const char *sr_key_idle_of(char *buf, const char *card_key);
/* Where a card's command waits packed until its claim, when the card has
 * no hash (docs/redis.md "Redis layout"): its wait bucket into buf; returns its
 * field, as sr_key_idle. The value holds sr_wait_fields' values in order
 * (sr_wait_fields, enum sr_wait_field: generated, as sr_idle_fields). */
const char *sr_key_wait(char *buf, const char *prefix, const char *carrier, const char *card);
/* The value of field i of a packed value (an idle state, or a waiting
 * command) into out (n bytes); 0 when it is absent (or longer than out). */
int sr_idle_get(const char *packed, int i, char *out, size_t n);
/* The same for a waiting command's field i, its scene the reason when left empty. */
int sr_wait_get(const char *packed, int i, char *out, size_t n);
char *sr_key_card_facts(char *buf, const char *prefix, const char *card);
char *sr_key_device_facts(char *buf, const char *prefix, const char *device);
char *sr_key_accounts(char *buf, const char *prefix);
/* The cards of a device (SET of card ids), kept by sr-asset. */
char *sr_key_device_cards(char *buf, const char *prefix, const char *device);
/* Device evaluation keys are sharded: {dN} with N = FNV-1a(device) mod 16. */
#define SR_DEVICE_SHARDS 16
int sr_device_shard(const char *device);
/* "P:device_eval:{dN}:SUFFIX" (e.g. the shard's "queue") */
char *sr_key_shard(char *buf, const char *prefix, int shard, const char *suffix);
/* "P:device_eval:{dN}:dev:DEVICE" + suffix ("" for its state, ":scenes") */
char *sr_key_device_eval(char *buf, const char *prefix, const char *device, const char *suffix);
char *sr_key_device_lock(char *buf, const char *prefix, const char *device);
char *sr_key_switch(char *buf, const char *prefix);

#endif
