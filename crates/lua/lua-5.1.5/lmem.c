/*
** $Id: lmem.c,v 1.70.1.1 2007/12/27 13:02:25 roberto Exp $
** Interface to Memory Manager
** See Copyright Notice in lua.h
*/


#include <stddef.h>

#define lmem_c
#define LUA_CORE

#include "lua.h"

#include "ldebug.h"
#include "ldo.h"
#include "lmem.h"
#include "lobject.h"
#include "lstate.h"



/*
** About the realloc function:
** void * frealloc (void *ud, void *ptr, size_t osize, size_t nsize);
** (`osize' is the old size, `nsize' is the new size)
**
** Lua ensures that (ptr == NULL) iff (osize == 0).
**
** * frealloc(ud, NULL, 0, x) creates a new block of size `x'
**
** * frealloc(ud, p, x, 0) frees the block `p'
** (in this specific case, frealloc must return NULL).
** particularly, frealloc(ud, NULL, 0, 0) does nothing
** (which is equivalent to free(NULL) in ANSI C)
**
** frealloc returns NULL if it cannot create or reallocate the area
** (any reallocation to an equal or smaller size cannot fail!)
*/



#define MINSIZEARRAY	4


void *luaM_growaux_ (lua_State *L, void *block, int *size, size_t size_elems,
                     int limit, const char *errormsg) {
  void *newblock;
  int newsize;
  if (*size >= limit/2) {  /* cannot double it? */
    if (*size >= limit)  /* cannot grow even a little? */
      luaG_runerror(L, errormsg);
    newsize = limit;  /* still have at least one free place */
  }
  else {
    newsize = (*size)*2;
    if (newsize < MINSIZEARRAY)
      newsize = MINSIZEARRAY;  /* minimum size */
  }
  newblock = luaM_reallocv(L, block, *size, newsize, size_elems);
  *size = newsize;  /* update only when everything else is OK */
  return newblock;
}


void *luaM_toobig (lua_State *L) {
  luaG_runerror(L, "memory allocation error: block too big");
  return NULL;  /* to avoid warnings */
}



#define LIMITLAB_MEMSLACK ((lu_mem)1 << 20)

/*
** limitlab: the memory cap's slow path (see luaM_realloc_), out of line so that the usual call
** saves no more registers than it needs.
*/
static void limitlab_overcap (lua_State *L, lu_mem after) {
  global_State *g = G(L);
  if (!g->limitlab_memhit) {
    lua_Debug ar;
    int level;
    g->limitlab_memhit = 1;
    /* Where the script was: the innermost Lua function's current line (a C function such as
    ** string.rep has none), for the kill's message should this allocation be the one refused. */
    g->limitlab_memline = 0;
    for (level = 0; g->limitlab_memline <= 0 && lua_getstack(L, level, &ar); level++) {
      if (lua_getinfo(L, "l", &ar)) g->limitlab_memline = ar.currentline;
    }
    if (L->hookmask & LUA_MASKCOUNT) L->hookcount = 1;
  }
  if (after > g->limitlab_memcap + LIMITLAB_MEMSLACK)
    luaD_throw(L, LUA_ERRMEM);
}


/*
** limitlab: small blocks. A script's run allocates and frees a dozen small objects (the strings of
** KEYS, ARGV and replies, tables and their parts), the collector frees them in batches, and each
** went to the allocator and back. A block of up to LIMITLAB_SMALLMAX bytes is now allocated with
** its size rounded up to a multiple of 8 (its class) and, once freed, kept in its class's list for
** the next allocation of that class, up to LIMITLAB_FREEMAX bytes in all (the rest go back to the
** allocator; luaM_limitlab_drain gives back all of them). Lua's own count (totalbytes, which the
** collector, collectgarbage('count') and the memory cap read) is unchanged: it counts the sizes
** asked for. The allocator is asked for and given back the rounded size, so its own accounting
** agrees with itself.
*/
#define LIMITLAB_FREEMAX ((lu_mem)256 << 10)
#define smallclass(s)	(((s) + 7) >> 3)

static void *limitlab_smallnew (lua_State *L, global_State *g, size_t c) {
  void *b = g->limitlab_free[c];
  if (b != NULL) {
    g->limitlab_free[c] = *(void **)b;
    g->limitlab_freebytes -= c << 3;
    return b;
  }
  b = (*g->frealloc)(g->ud, NULL, 0, c << 3);
  if (b == NULL) luaD_throw(L, LUA_ERRMEM);
  return b;
}

static void limitlab_smallfree (global_State *g, void *b, size_t c) {
  if (g->limitlab_freebytes + (c << 3) <= LIMITLAB_FREEMAX) {
    *(void **)b = g->limitlab_free[c];
    g->limitlab_free[c] = b;
    g->limitlab_freebytes += c << 3;
  }
  else
    (*g->frealloc)(g->ud, b, c << 3, 0);
}

void luaM_limitlab_drain (lua_State *L) {
  global_State *g = G(L);
  size_t c;
  for (c = 1; c <= LIMITLAB_SMALLCLASSES; c++) {
    while (g->limitlab_free[c] != NULL) {
      void *b = g->limitlab_free[c];
      g->limitlab_free[c] = *(void **)b;
      (*g->frealloc)(g->ud, b, c << 3, 0);
    }
  }
  g->limitlab_freebytes = 0;
}

/*
** generic allocation routine.
*/
void *luaM_realloc_ (lua_State *L, void *block, size_t osize, size_t nsize) {
  global_State *g = G(L);
  lu_mem after = (g->totalbytes - osize) + nsize;
  lua_assert((osize == 0) == (block == NULL));
  /* limitlab: the emulator's memory cap per script run (lua_memcapfields; "no cap" is the largest
  ** value, so that the usual case costs one comparison). The first growth past the cap is let
  ** through and makes the count hook fire at the next loop or call: the emulator kills the script
  ** there with a runtime error, which carries the script's line (an allocation failure carries
  ** none). Past the cap by more than LIMITLAB_MEMSLACK (one allocation that large, or a script
  ** that never loops or calls again), growth fails as an allocation failure would; shrinking is
  ** always allowed. */
  if (after > g->limitlab_memcap && nsize > osize)
    limitlab_overcap(L, after);
  if (osize <= LIMITLAB_SMALLMAX && nsize <= LIMITLAB_SMALLMAX) {  /* limitlab: small blocks */
    size_t oc = smallclass(osize), nc = smallclass(nsize);
    if (oc != nc) {
      void *nb = NULL;
      if (nc != 0) {
        nb = limitlab_smallnew(L, g, nc);
        if (oc != 0) memcpy(nb, block, osize < nsize ? osize : nsize);
      }
      if (oc != 0) limitlab_smallfree(g, block, oc);
      block = nb;
    }
  }
  else {  /* a large block on one side at least; a small one is of its class's size */
    size_t os = osize <= LIMITLAB_SMALLMAX ? smallclass(osize) << 3 : osize;
    size_t ns = nsize <= LIMITLAB_SMALLMAX ? smallclass(nsize) << 3 : nsize;
    block = (*g->frealloc)(g->ud, block, os, ns);
    if (block == NULL && ns > 0)
      luaD_throw(L, LUA_ERRMEM);
  }
  lua_assert((nsize == 0) == (block == NULL));
  g->totalbytes = after;
  return block;
}

