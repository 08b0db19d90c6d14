/*
** $Id: lstring.c,v 2.8.1.1 2007/12/27 13:02:25 roberto Exp $
** String table (keeps all strings handled by Lua)
** See Copyright Notice in lua.h
*/


#include <string.h>

#define lstring_c
#define LUA_CORE

#include "lua.h"

#include "lmem.h"
#include "lobject.h"
#include "lstate.h"
#include "lstring.h"



void luaS_resize (lua_State *L, int newsize) {
  GCObject **newhash;
  stringtable *tb;
  int i;
  if (G(L)->gcstate == GCSsweepstring)
    return;  /* cannot resize during GC traverse */
  newhash = luaM_newvector(L, newsize, GCObject *);
  tb = &G(L)->strt;
  for (i=0; i<newsize; i++) newhash[i] = NULL;
  /* rehash */
  for (i=0; i<tb->size; i++) {
    GCObject *p = tb->hash[i];
    while (p) {  /* for each node in the list */
      GCObject *next = p->gch.next;  /* save next */
      unsigned int h = gco2ts(p)->hash;
      int h1 = lmod(h, newsize);  /* new position */
      lua_assert(cast_int(h%newsize) == lmod(h, newsize));
      p->gch.next = newhash[h1];  /* chain it */
      newhash[h1] = p;
      p = next;
    }
  }
  luaM_freearray(L, tb->hash, tb->size, TString *);
  tb->size = newsize;
  tb->hash = newhash;
}


/*
** limitlab: shrinks the string table to newsize, a power of two below its size, in place: the
** chain of slot i joins the chain of slot i mod newsize, where the hashes of its strings fall once
** the size is newsize (sizes are powers of two); then the slot array is reallocated smaller. It
** allocates nothing, so it cannot fail, not even past the emulator's memory cap (lmem.c always
** lets a block shrink). The order within chains is invisible to scripts.
*/
void luaS_shrink (lua_State *L, int newsize) {
  stringtable *tb = &G(L)->strt;
  int i;
  lua_assert(newsize < tb->size && (newsize & (newsize - 1)) == 0);
  if (G(L)->gcstate == GCSsweepstring)
    return;  /* cannot resize during GC traverse */
  for (i = newsize; i < tb->size; i++) {
    GCObject *p = tb->hash[i];
    if (p != NULL) {
      GCObject *last = p;
      GCObject **dst = &tb->hash[lmod(i, newsize)];
      while (last->gch.next != NULL) last = last->gch.next;
      last->gch.next = *dst;  /* this chain goes in front of its new slot's */
      *dst = p;
    }
  }
  luaM_reallocvector(L, tb->hash, tb->size, newsize, GCObject *);
  tb->size = newsize;
}


static TString *newlstr (lua_State *L, const char *str, size_t l,
                                       unsigned int h) {
  TString *ts;
  stringtable *tb;
  if (l+1 > (MAX_SIZET - sizeof(TString))/sizeof(char))
    luaM_toobig(L);
  ts = cast(TString *, luaM_malloc(L, (l+1)*sizeof(char)+sizeof(TString)));
  ts->tsv.len = l;
  ts->tsv.hash = h;
  ts->tsv.marked = luaC_white(G(L));
  ts->tsv.tt = LUA_TSTRING;
  ts->tsv.reserved = 0;
  memcpy(ts+1, str, l*sizeof(char));
  ((char *)(ts+1))[l] = '\0';  /* ending 0 */
  tb = &G(L)->strt;
  h = lmod(h, tb->size);
  ts->tsv.next = tb->hash[h];  /* chain new entry */
  tb->hash[h] = obj2gco(ts);
  tb->nuse++;
  if (tb->nuse > cast(lu_int32, tb->size) && tb->size <= MAX_INT/2)
    luaS_resize(L, tb->size*2);  /* too crowded */
  return ts;
}


TString *luaS_newlstr (lua_State *L, const char *str, size_t l) {
  GCObject *o;
  unsigned int h = cast(unsigned int, l);  /* seed */
  size_t l1;
  /* limitlab: every char is hashed, whatever the length, as in Redis's deps/lua (stock 5.1.5
  ** hashes one char in (l>>5)+1 of a string of 32 chars or more). The same hash as Redis's, so the
  ** same order of `next`/`pairs` over long string keys; and long strings that differ in a few chars
  ** (`string.rep('x', 1024) .. i`) no longer share a hash: with stock 5.1.5 they piled up in a few
  ** chains of the string table, and interning each new one compared it with all of its chain.
  ** Four chars a round; the same hash as one a round. */
  {
    const unsigned char *p = (const unsigned char *)str;
    for (l1 = l; l1 >= 4; l1 -= 4) {
      h = h ^ ((h<<5)+(h>>2)+p[l1-1]);
      h = h ^ ((h<<5)+(h>>2)+p[l1-2]);
      h = h ^ ((h<<5)+(h>>2)+p[l1-3]);
      h = h ^ ((h<<5)+(h>>2)+p[l1-4]);
    }
    for (; l1 > 0; l1--)
      h = h ^ ((h<<5)+(h>>2)+p[l1-1]);
  }
  for (o = G(L)->strt.hash[lmod(h, G(L)->strt.size)];
       o != NULL;
       o = o->gch.next) {
    TString *ts = rawgco2ts(o);
    /* limitlab: the hashes are compared first, so a chain of strings of the same length (a
    ** script's keys, `rate:{user1}:28401`, `rate:{user2}:28401`) costs no memcmp but the match's */
    if (ts->tsv.hash == h && ts->tsv.len == l && (memcmp(str, getstr(ts), l) == 0)) {
      /* string may be dead */
      if (isdead(G(L), o)) changewhite(o);
      return ts;
    }
  }
  return newlstr(L, str, l, h);  /* not found */
}


Udata *luaS_newudata (lua_State *L, size_t s, Table *e) {
  Udata *u;
  if (s > MAX_SIZET - sizeof(Udata))
    luaM_toobig(L);
  u = cast(Udata *, luaM_malloc(L, s + sizeof(Udata)));
  u->uv.marked = luaC_white(G(L));  /* is not finalized */
  u->uv.tt = LUA_TUSERDATA;
  u->uv.len = s;
  u->uv.metatable = NULL;
  u->uv.env = e;
  /* chain it on udata list (after main thread) */
  u->uv.next = G(L)->mainthread->next;
  G(L)->mainthread->next = obj2gco(u);
  return u;
}

