/*
 * leader.c - the duties' place in the shared region (see leader.h): two
 * integers changed by compare-and-swap, so that neither the master nor a
 * worker ever waits on the other.
 */
#include "leader.h"

#include "shm.h"

void
leader_set_generation(int gen)
{
    struct shm_region *r = shm_region();
    if (r != NULL) {
        __atomic_store_n(&r->leader.gen, gen, __ATOMIC_RELEASE);
    }
}

void
leader_gone(pid_t pid)
{
    struct shm_region *r = shm_region();
    int was = (int) pid;
    if (r != NULL && pid > 0) {
        __atomic_compare_exchange_n(&r->leader.holder, &was, 0, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    }
}

int
leader_poll(int gen, pid_t self)
{
    struct shm_region *r = shm_region();
    if (r == NULL || self <= 0) {
        return 0;
    }
    int running = __atomic_load_n(&r->leader.gen, __ATOMIC_ACQUIRE);
    int holder = __atomic_load_n(&r->leader.holder, __ATOMIC_ACQUIRE);
    if (holder == (int) self) {
        return running == gen;
    }
    if (holder != 0 || running == 0 || running != gen) {
        return 0;
    }
    int free_place = 0;
    return __atomic_compare_exchange_n(&r->leader.holder, &free_place, (int) self, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void
leader_release(pid_t self)
{
    leader_gone(self);
}

pid_t
leader_holder(void)
{
    struct shm_region *r = shm_region();
    return r != NULL ? (pid_t) __atomic_load_n(&r->leader.holder, __ATOMIC_ACQUIRE) : 0;
}
