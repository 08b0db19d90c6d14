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
** generic allocation routine.
*/
void *luaM_realloc_ (lua_State *L, void *block, size_t osize, size_t nsize) {
  global_State *g = G(L);
  lua_assert((osize == 0) == (block == NULL));
  lu_mem after = (g->totalbytes - osize) + nsize;
  /* limitlab: the emulator's memory cap per script run (lua_memcapfields; "no cap" is the largest
  ** value, so that the usual case costs one comparison). The first growth past the cap is let
  ** through and makes the count hook fire at the next loop or call: the emulator kills the script
  ** there with a runtime error, which carries the script's line (an allocation failure carries
  ** none). Past the cap by more than LIMITLAB_MEMSLACK (one allocation that large, or a script
  ** that never loops or calls again), growth fails as an allocation failure would; shrinking is
  ** always allowed. */
  if (after > g->limitlab_memcap && nsize > osize) {
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
  block = (*g->frealloc)(g->ud, block, osize, nsize);
  if (block == NULL && nsize > 0)
    luaD_throw(L, LUA_ERRMEM);
  lua_assert((nsize == 0) == (block == NULL));
  g->totalbytes = after;
  return block;
}

