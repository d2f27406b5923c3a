/*
 * riarc_route_nif: an erl_tracer module whose tracer state is a routing table
 * Pid -> {Owner, Count}. See riarc_route.erl for the Erlang side and the API.
 *
 * Why: handing a traced process from one tracer process to another with
 * erlang:trace/3 is not a clean cut on OTP 25 (events produced before the switch
 * can reach the old tracer after trace_delivered/1 answered). Here the VM's tracer
 * never changes; the NIF routes every event to the owner the table names, and a
 * switch of owner returns how many events the previous owner was sent, so that
 * owner can wait for exactly that many.
 *
 * Concurrency. trace/5 runs on any scheduler, in the context of the process that
 * triggered the probe. The table is split into NSTRIPES stripes by a hash of the
 * pid; each stripe is an open-addressing hash table under its own mutex.
 *
 * Invariant (exactly once, exact counts): for a tracee P, the owner lookup, the
 * enif_send of the event and the increment of P's Count all happen while holding
 * P's stripe lock; switch/3 reads and resets Count and changes the owner under the
 * same lock. So every event of P is sent to exactly one owner, and the Count that
 * switch/3 returns is exactly the number of P's events sent to the previous owner
 * since the entry was created or last switched. enif_send from a tracer callback
 * either enqueues directly or defers the message to a per-(tracee, receiver)
 * queue that the VM flushes later; either way it is delivered (if the receiver
 * lives), which is all the count protocol needs: no ordering across senders and
 * no clock are assumed.
 *
 * Spawn: on {spawn, Child} of parent P both stripe locks are held (taken in
 * ascending stripe index, the only place two locks are held, so no deadlock), and
 * Child -> owner(P) is inserted before the spawn event is sent: no one can learn
 * of Child from this table's events and find it missing.
 *
 * Seal: a table made with a seal (a random integer only its owners know) wraps
 * every event as {riarc_sealed, Seal, Event}. A trace message is otherwise an
 * ordinary message anybody can send ({trace, Pid, exit, normal} sent by the
 * monitored system itself), so a consumer accepts only sealed ones.
 *
 * Stop: the dead flag is set, then every stripe is emptied under its lock. The
 * trace callback checks the flag under the stripe lock, so once stop/1 returns no
 * event is sent any more; enabled/3 returns 'remove' so the VM drops the tracer.
 */
#include <erl_nif.h>
#include <stdint.h>
#include <string.h>

#define NSTRIPES 64          /* power of two */
#define STRIPE_BITS 6
#define MIN_CAP 16           /* per stripe, power of two */

typedef struct {
    ERL_NIF_TERM key;        /* raw local pid (an immediate); 0 = empty slot */
    ErlNifPid owner;
    uint64_t count;          /* events sent to owner since insert or last switch */
} entry_t;

typedef struct {
    ErlNifMutex *lock;
    entry_t *slots;
    size_t cap;              /* power of two */
    size_t used;
    uint64_t events;         /* events sent to an entry's owner */
    uint64_t orphans;        /* events of tracees without entry, sent to default */
    char pad[64];            /* keep neighbouring stripes off one cache line */
} stripe_t;

typedef struct {
    ErlNifPid default_owner;
    int dead;                /* read and written with __atomic builtins */
    int probe;               /* test mode: forward raw callback data, incl. spawned */
    uint64_t probe_seq;      /* test mode: global order of callbacks (__atomic) */
    uint64_t seal;           /* 0: events unwrapped; else wrapped with this secret */
    stripe_t stripes[NSTRIPES];
} table_t;

static ErlNifResourceType *table_type;

static ERL_NIF_TERM am_ok, am_error, am_true, am_false, am_gone, am_trace,
    am_discard, am_remove, am_trace_status, am_spawn, am_spawned, am_exit,
    am_receive, am_receive_timeout, am_timeout, am_extra, am_match_spec_result,
    am_entries, am_events, am_orphans, am_exists, am_not_found, am_riarc_probe,
    am_nomem, am_clock_service, am_undefined, am_send, am_send_to_non_existing_process,
    am_riarc_sealed, am_call;

/* ---- hashing and the per-stripe open-addressing table ----------------------- */

static inline uint64_t mix(uint64_t x)
{
    /* splitmix64 finaliser: pid immediates differ mostly in middle bits */
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static inline stripe_t *stripe_of(table_t *t, ERL_NIF_TERM key, unsigned *idx)
{
    unsigned i = (unsigned)(mix((uint64_t)key) >> (64 - STRIPE_BITS));
    if (idx) *idx = i;
    return &t->stripes[i];
}

static inline size_t home_of(const stripe_t *s, ERL_NIF_TERM key)
{
    return (size_t)mix((uint64_t)key) & (s->cap - 1);
}

/* Caller holds s->lock. Returns the entry or NULL. */
static entry_t *find(stripe_t *s, ERL_NIF_TERM key)
{
    size_t mask = s->cap - 1, i = home_of(s, key);
    for (;;) {
        entry_t *e = &s->slots[i];
        if (e->key == key) return e;
        if (e->key == 0) return NULL;
        i = (i + 1) & mask;
    }
}

/* Caller holds s->lock. Rehash into newcap slots; 0 if out of memory. */
static int rehash(stripe_t *s, size_t newcap)
{
    entry_t *old = s->slots;
    size_t oldcap = s->cap, k;
    entry_t *slots = enif_alloc(newcap * sizeof(entry_t));
    if (!slots) return 0;
    memset(slots, 0, newcap * sizeof(entry_t));
    s->slots = slots;
    s->cap = newcap;
    for (k = 0; k < oldcap; k++) {
        if (old[k].key != 0) {
            size_t i = home_of(s, old[k].key);
            while (slots[i].key != 0) i = (i + 1) & (newcap - 1);
            slots[i] = old[k];
        }
    }
    enif_free(old);
    return 1;
}

/* Caller holds s->lock. Inserts or overwrites key; NULL if out of memory.
 * Invalidates pointers into s->slots (it may rehash): owner is taken by value, as
 * it often comes from another entry of the same stripe. */
static entry_t *put(stripe_t *s, ERL_NIF_TERM key, ErlNifPid owner)
{
    entry_t *e = find(s, key);
    if (!e) {
        size_t i;
        /* load factor at most 1/2 keeps linear probes short */
        if ((s->used + 1) * 2 > s->cap && !rehash(s, s->cap * 2)) return NULL;
        i = home_of(s, key);
        while (s->slots[i].key != 0) i = (i + 1) & (s->cap - 1);
        e = &s->slots[i];
        e->key = key;
        s->used++;
    }
    e->owner = owner;
    e->count = 0;
    return e;
}

/* Caller holds s->lock. Backward-shift deletion (no tombstones), then shrink so
 * memory follows the number of live traced processes. */
static void del(stripe_t *s, entry_t *e)
{
    size_t mask = s->cap - 1, i = (size_t)(e - s->slots), j = i;
    for (;;) {
        s->slots[i].key = 0;
        for (;;) {
            size_t k;
            j = (j + 1) & mask;
            if (s->slots[j].key == 0) goto done;
            k = home_of(s, s->slots[j].key);
            /* entry j may stay if its home lies cyclically in (i, j] */
            if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;
            break;
        }
        s->slots[i] = s->slots[j];
        i = j;
    }
done:
    s->used--;
    if (s->cap > MIN_CAP && s->used * 8 < s->cap) (void)rehash(s, s->cap / 2);
}

static void clear_stripe(stripe_t *s)
{
    memset(s->slots, 0, s->cap * sizeof(entry_t));
    s->used = 0;
    if (s->cap > MIN_CAP) (void)rehash(s, MIN_CAP);
}

static inline int is_dead(table_t *t)
{
    return __atomic_load_n(&t->dead, __ATOMIC_ACQUIRE);
}

/* ---- resource --------------------------------------------------------------- */

static void table_dtor(ErlNifEnv *env, void *obj)
{
    table_t *t = obj;
    int k;
    (void)env;
    for (k = 0; k < NSTRIPES; k++) {
        if (t->stripes[k].lock) enif_mutex_destroy(t->stripes[k].lock);
        if (t->stripes[k].slots) enif_free(t->stripes[k].slots);
    }
}

static int get_table(ErlNifEnv *env, ERL_NIF_TERM term, table_t **t)
{
    return enif_get_resource(env, term, table_type, (void **)t);
}

/* The arguments (Table, Pid, Owner) of insert/3 and switch/3, and the stripe of Pid. */
static int get_entry_args(ErlNifEnv *env, const ERL_NIF_TERM argv[], table_t **t,
                          ErlNifPid *pid, ErlNifPid *owner, stripe_t **s)
{
    if (!get_table(env, argv[0], t) || !enif_get_local_pid(env, argv[1], pid)
        || !enif_get_local_pid(env, argv[2], owner))
        return 0;
    *s = stripe_of(*t, pid->pid, NULL);
    return 1;
}

/* ---- Erlang-called NIFs ----------------------------------------------------- */

static ERL_NIF_TERM nif_loaded(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)env; (void)argc; (void)argv;
    return am_true;
}

/* new_table(DefaultOwner, Probe, Seal) */
static ERL_NIF_TERM new_table(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    ErlNifPid def;
    table_t *t;
    ERL_NIF_TERM res;
    ErlNifUInt64 seal;
    int k;
    (void)argc;
    if (!enif_get_local_pid(env, argv[0], &def)) return enif_make_badarg(env);
    if (argv[1] != am_true && argv[1] != am_false) return enif_make_badarg(env);
    if (!enif_get_uint64(env, argv[2], &seal)) return enif_make_badarg(env);
    t = enif_alloc_resource(table_type, sizeof(table_t));
    if (!t) return enif_make_tuple2(env, am_error, am_nomem);
    memset(t, 0, sizeof(*t));   /* the destructor copes with partial set-up */
    t->default_owner = def;
    t->probe = argv[1] == am_true;
    t->seal = seal;
    for (k = 0; k < NSTRIPES; k++) {
        stripe_t *s = &t->stripes[k];
        s->lock = enif_mutex_create("riarc_route_stripe");
        s->slots = enif_alloc(MIN_CAP * sizeof(entry_t));
        if (!s->lock || !s->slots) {
            enif_release_resource(t);
            return enif_make_tuple2(env, am_error, am_nomem);
        }
        memset(s->slots, 0, MIN_CAP * sizeof(entry_t));
        s->cap = MIN_CAP;
    }
    res = enif_make_resource(env, t);
    enif_release_resource(t);
    return enif_make_tuple2(env, am_ok, res);
}

/* insert(Table, Pid, Owner) -> ok | exists | {error, nomem} */
static ERL_NIF_TERM insert(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    table_t *t;
    ErlNifPid pid, owner;
    stripe_t *s;
    ERL_NIF_TERM res = am_ok;
    (void)argc;
    if (!get_entry_args(env, argv, &t, &pid, &owner, &s))
        return enif_make_badarg(env);
    enif_mutex_lock(s->lock);
    if (find(s, pid.pid)) res = am_exists;
    else if (!put(s, pid.pid, owner)) res = enif_make_tuple2(env, am_error, am_nomem);
    enif_mutex_unlock(s->lock);
    return res;
}

/* switch(Table, Pid, NewOwner) -> {ok, Count} | {error, gone} */
static ERL_NIF_TERM switch_owner(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    table_t *t;
    ErlNifPid pid, owner;
    stripe_t *s;
    entry_t *e;
    ERL_NIF_TERM res;
    (void)argc;
    if (!get_entry_args(env, argv, &t, &pid, &owner, &s))
        return enif_make_badarg(env);
    enif_mutex_lock(s->lock);
    e = find(s, pid.pid);
    if (e) {
        res = enif_make_tuple2(env, am_ok, enif_make_uint64(env, e->count));
        e->owner = owner;
        e->count = 0;
    } else {
        res = enif_make_tuple2(env, am_error, am_gone);
    }
    enif_mutex_unlock(s->lock);
    return res;
}

/* remove(Table, Pid) -> ok | not_found */
static ERL_NIF_TERM remove_entry(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    table_t *t;
    ErlNifPid pid;
    stripe_t *s;
    entry_t *e;
    (void)argc;
    if (!get_table(env, argv[0], &t) || !enif_get_local_pid(env, argv[1], &pid))
        return enif_make_badarg(env);
    s = stripe_of(t, pid.pid, NULL);
    enif_mutex_lock(s->lock);
    e = find(s, pid.pid);
    if (e) del(s, e);
    enif_mutex_unlock(s->lock);
    return e ? am_ok : am_not_found;
}

static ERL_NIF_TERM stop_table(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    table_t *t;
    int k;
    (void)argc;
    if (!get_table(env, argv[0], &t)) return enif_make_badarg(env);
    __atomic_store_n(&t->dead, 1, __ATOMIC_RELEASE);
    /* Race: a callback may have passed enabled/3 before the flag was set; it
     * rechecks the flag under its stripe lock, which we take here, so after this
     * loop no callback sends anything. */
    for (k = 0; k < NSTRIPES; k++) {
        enif_mutex_lock(t->stripes[k].lock);
        clear_stripe(&t->stripes[k]);
        enif_mutex_unlock(t->stripes[k].lock);
    }
    return am_ok;
}

static ERL_NIF_TERM stats(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    table_t *t;
    uint64_t entries = 0, events = 0, orphans = 0;
    ERL_NIF_TERM keys[3], vals[3], map;
    int k;
    (void)argc;
    if (!get_table(env, argv[0], &t)) return enif_make_badarg(env);
    for (k = 0; k < NSTRIPES; k++) {
        stripe_t *s = &t->stripes[k];
        enif_mutex_lock(s->lock);
        entries += s->used;
        events += s->events;
        orphans += s->orphans;
        enif_mutex_unlock(s->lock);
    }
    keys[0] = am_entries; vals[0] = enif_make_uint64(env, entries);
    keys[1] = am_events;  vals[1] = enif_make_uint64(env, events);
    keys[2] = am_orphans; vals[2] = enif_make_uint64(env, orphans);
    if (!enif_make_map_from_arrays(env, keys, vals, 3, &map)) return enif_make_badarg(env);
    return map;
}

/* ---- erl_tracer callbacks --------------------------------------------------- */

/* enabled(TraceTag, TracerState, Tracee) -> trace | discard | remove.
 * Cheap: no lock. Only the events riarc uses are routed: spawn, exit, send and
 * receive. Not 'spawned' (riarc derives the child's start from the parent's spawn
 * event: 'spawned' is produced in the parent's context and so is not ordered with the
 * child's own events), nor the other events of the procs flag (link, unlink,
 * register, unregister, ...): a registered process's 'unregister' comes after its
 * 'exit', when its entry is gone, and would be an orphan. Ports are not routed.
 * Calls are routed: the one function riarc gives a call pattern starts processes on
 * other nodes (riarc_trace_pattern), and such a start shows nowhere else in the
 * parent's trace; a call of a function another tool patterned is routed too, counted
 * like every event, and dropped by the tracer that decodes it. */
static ERL_NIF_TERM enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    table_t *t;
    (void)argc;
    if (!get_table(env, argv[1], &t) || is_dead(t)) return am_remove;
    if (argv[0] == am_trace_status) return am_trace;
    if (t->probe) return am_trace;
    if (!enif_is_pid(env, argv[2])) return am_discard;
    if (argv[0] == am_spawn || argv[0] == am_exit || argv[0] == am_send ||
        argv[0] == am_receive || argv[0] == am_send_to_non_existing_process ||
        argv[0] == am_call)
        return am_trace;
    return am_discard;
}

/* Builds the message for the owner, in the caller's env. */
static ERL_NIF_TERM build(ErlNifEnv *env, ERL_NIF_TERM tag, ERL_NIF_TERM tracee,
                          ERL_NIF_TERM term, ERL_NIF_TERM opts)
{
    ERL_NIF_TERM extra, msr;
    if (tag == am_receive) {
        /* A receive timeout is traced as the message 'timeout' from node
         * 'clock_service', sender 'undefined' (checked on OTP 25). riarc's receive
         * pattern makes the match spec result 'clock_service' for exactly those;
         * a pattern returning the sender gives 'undefined'. Either way a timer
         * message 'timeout' (erlang:send_after/3) looks the same: the VM traces
         * it with the same arguments. */
        if (term == am_timeout && enif_is_map(env, opts)
            && enif_get_map_value(env, opts, am_match_spec_result, &msr)
            && (msr == am_clock_service || msr == am_undefined))
            return enif_make_tuple3(env, am_trace, tracee, am_receive_timeout);
        return enif_make_tuple4(env, am_trace, tracee, am_receive, term);
    }
    if (enif_is_map(env, opts) && enif_get_map_value(env, opts, am_extra, &extra))
        return enif_make_tuple5(env, am_trace, tracee, tag, term, extra);
    return enif_make_tuple4(env, am_trace, tracee, tag, term);
}

/* trace(TraceTag, TracerState, Tracee, TraceTerm, Opts) -> ok */
static ERL_NIF_TERM trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    table_t *t;
    ErlNifPid tracee, child;
    ERL_NIF_TERM tag = argv[0], msg;
    stripe_t *s, *cs = NULL;
    unsigned si, ci;
    entry_t *e;
    int is_spawn;
    (void)argc;
    if (!get_table(env, argv[1], &t) || !enif_get_local_pid(env, argv[2], &tracee))
        return am_ok;
    if (t->probe) {
        /* Test mode: which process runs the callback, and what did it get? */
        ErlNifPid self;
        ERL_NIF_TERM me = enif_self(env, &self) ? enif_make_pid(env, &self) : am_false;
        uint64_t seq = __atomic_add_fetch(&t->probe_seq, 1, __ATOMIC_SEQ_CST);
        msg = enif_make_tuple7(env, am_riarc_probe, enif_make_uint64(env, seq), me, tag,
                               argv[2], argv[3], argv[4]);
    } else {
        msg = build(env, tag, argv[2], argv[3], argv[4]);
        if (t->seal)
            msg = enif_make_tuple3(env, am_riarc_sealed, enif_make_uint64(env, t->seal), msg);
    }
    is_spawn = tag == am_spawn && enif_get_local_pid(env, argv[3], &child);
    s = stripe_of(t, tracee.pid, &si);
    if (is_spawn) {
        cs = stripe_of(t, child.pid, &ci);
        if (cs == s) cs = NULL;
    }
    /* Two locks only here, always in ascending stripe order: no deadlock. */
    if (cs && ci < si) enif_mutex_lock(cs->lock);
    enif_mutex_lock(s->lock);
    if (cs && ci > si) enif_mutex_lock(cs->lock);
    if (!is_dead(t)) {
        e = find(s, tracee.pid);
        if (e) {
            /* Invariant: the child's entry exists before anyone can be told
             * of the child by this event; its first owner is exactly the
             * receiver of the parent's spawn event. */
            if (is_spawn) {
                (void)put(cs ? cs : s, child.pid, e->owner);
                /* put() may have moved the entries of s when it grew */
                if (!cs) e = find(s, tracee.pid);
            }
            e->count++;
            s->events++;
            (void)enif_send(env, &e->owner, NULL, msg);
            if (tag == am_exit) del(s, e);
        } else {
            /* Race: an event of a tracee with no entry (cleared, or never
             * inserted). Not dropped: it goes to the default owner, counted. */
            s->orphans++;
            (void)enif_send(env, &t->default_owner, NULL, msg);
        }
    }
    if (cs) enif_mutex_unlock(cs->lock);
    enif_mutex_unlock(s->lock);
    return am_ok;
}

/* ---- loading ---------------------------------------------------------------- */

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
    (void)priv; (void)info;
    table_type = enif_open_resource_type(env, NULL, "riarc_route_table", table_dtor,
                                         ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER, NULL);
    if (!table_type) return 1;
#define ATOM(v, s) v = enif_make_atom(env, s)
    ATOM(am_ok, "ok"); ATOM(am_error, "error"); ATOM(am_true, "true");
    ATOM(am_false, "false"); ATOM(am_gone, "gone"); ATOM(am_trace, "trace");
    ATOM(am_discard, "discard"); ATOM(am_remove, "remove");
    ATOM(am_trace_status, "trace_status"); ATOM(am_spawn, "spawn");
    ATOM(am_spawned, "spawned"); ATOM(am_exit, "exit"); ATOM(am_receive, "receive");
    ATOM(am_receive_timeout, "receive_timeout"); ATOM(am_timeout, "timeout");
    ATOM(am_extra, "extra"); ATOM(am_match_spec_result, "match_spec_result");
    ATOM(am_entries, "entries"); ATOM(am_events, "events"); ATOM(am_orphans, "orphans");
    ATOM(am_exists, "exists"); ATOM(am_not_found, "not_found");
    ATOM(am_riarc_probe, "riarc_probe"); ATOM(am_nomem, "nomem");
    ATOM(am_clock_service, "clock_service"); ATOM(am_undefined, "undefined");
    ATOM(am_send, "send");
    ATOM(am_send_to_non_existing_process, "send_to_non_existing_process");
    ATOM(am_riarc_sealed, "riarc_sealed"); ATOM(am_call, "call");
#undef ATOM
    return 0;
}

static int upgrade(ErlNifEnv *env, void **priv, void **old_priv, ERL_NIF_TERM info)
{
    (void)old_priv;
    return load(env, priv, info);
}

static ErlNifFunc funcs[] = {
    {"nif_loaded", 0, nif_loaded, 0},
    {"new_table", 3, new_table, 0},
    {"insert", 3, insert, 0},
    {"switch", 3, switch_owner, 0},
    {"remove", 2, remove_entry, 0},
    {"stop", 1, stop_table, 0},
    {"stats", 1, stats, 0},
    {"enabled", 3, enabled, 0},
    {"trace", 5, trace, 0}
};

ERL_NIF_INIT(riarc_route, funcs, load, NULL, upgrade, NULL)
