/**
 * Threshold entries as numbers: every thing's entries in one shared buffer, a thing's together
 * (its block: `Runtime.tb`, room for `tc` entries, `tn` of them in use), 32 bytes an entry, so a
 * thing with two entries is one cache line and a scan of its entries touches nothing else. An
 * entry object per (rule, thing) pair was long-lived and promoted, and each one a cold line that
 * `count`'s search and `prune` touched; numbers in a typed array are neither.
 *
 * An entry's layout, in 32-bit words from `e * WORDS`:
 *   0  the rule's dense number (`CompiledRule.slot`, `RuleIndex.slotOf`)
 *   1  count (consecutive matches since the last reset)
 *   2  version (`CompiledRule.version`, unsigned)
 *   3  1 when the entry has no version (written before versions existed), else 0
 * and in 64-bit words from `e * F64`:
 *   2  lastSeq (NaN when the entry has none: it equals no sequence number, as undefined did)
 *   3  lastFiredAt (epoch milliseconds, 0 if never)
 */
import type { ThresholdState } from "./state/index.js";

export const WORDS = 8;
export const F64 = 4;
export const SLOT = 0;
export const COUNT = 1;
export const VERSION = 2;
export const UNVERSIONED = 3;
export const LAST_SEQ = 2;
export const LAST_FIRED = 3;

/** A thing's block of entries, as its `Runtime` holds it. */
export interface Block {
  /** The pool's chunk the block lies in; meaningless while `tc` is 0. */
  tk: number;
  /** First entry of the block in its chunk; meaningless while `tc` is 0. */
  tb: number;
  /** Entries the block has room for; 0: the thing has no block (no entries were ever made or imported). */
  tc: number;
  /** Entries in use, from `tb` on (live or inert: see `isLive`). */
  tn: number;
}

/** What `Runtimes` asks of the thresholds when it takes a thing in or lets it go (`Thresholds`). */
export interface EntryKeeper {
  /** Takes a stored list into the thing's block; returns how many entries it took. */
  adopt(rt: Block, list: readonly ThresholdState[] | undefined): number;
  /** The thing's entries in the object form: all of them, or the live ones. */
  entries(rt: Block, all: boolean): ThresholdState[] | undefined;
  release(rt: Block): void;
  clear(): void;
}

/** Room of a thing's first block: most things of the workload keep 2-6 entries. */
export const FIRST_BLOCK = 2;

/** Entries a chunk holds (2 MiB): a block bigger than this gets a chunk of its own. */
const CHUNK = 1 << 16;

/** One buffer of the pool and its views. */
export class Chunk {
  readonly i32: Int32Array;
  readonly u32: Uint32Array;
  readonly f64: Float64Array;
  /** The first entry never handed out. */
  top = 0;

  constructor(readonly size: number) {
    const buf = new ArrayBuffer(size * WORDS * 4);
    this.i32 = new Int32Array(buf);
    this.u32 = new Uint32Array(buf);
    this.f64 = new Float64Array(buf);
  }
}

/**
 * The buffers and their allocator: blocks of a power of two entries, each aligned to its size (a
 * two-entry block is one cache line), taken from a free list of its size or from the end of the
 * last chunk. A block a thing outgrew goes to its size's free list. The pool grows by chunks, never
 * by copying: on this machine memory touched for the first time costs about 5 ms a MiB (page
 * faults), and a buffer that doubled and copied itself touched twice what it held.
 */
export class EntryPool {
  readonly chunks: Chunk[] = [new Chunk(CHUNK)];
  /** Chunk of the block the last `alloc` returned. */
  chunk = 0;
  /** Free blocks by log2 of their size: chunk and first entry, in pairs. */
  private readonly free: number[][] = [];

  constructor(private readonly chunkSize = CHUNK) {
    if (chunkSize !== CHUNK) this.chunks[0] = new Chunk(chunkSize);
  }

  /** A block of `size` entries (a power of two): its first entry, in chunk `this.chunk`. */
  alloc(size: number): number {
    const list = this.free[Math.log2(size)];
    if (list !== undefined && list.length > 0) {
      const start = list.pop()!;
      this.chunk = list.pop()!;
      return start;
    }
    let k = this.chunks.length - 1;
    let c = this.chunks[k]!;
    let start = (c.top + size - 1) & -size;
    if (start + size > c.size) {
      // The rest of the chunk goes to the free lists; a block bigger than a chunk has one to itself.
      this.freeRange(k, c.top, c.size);
      c.top = c.size;
      c = new Chunk(Math.max(this.chunkSize, size));
      k = this.chunks.push(c) - 1;
      start = 0;
    }
    this.freeRange(k, c.top, start);
    c.top = start + size;
    this.chunk = k;
    return start;
  }

  release(chunk: number, start: number, size: number): void {
    (this.free[Math.log2(size)] ??= []).push(chunk, start);
  }

  /** Every block free again (the engine forgot every thing). */
  clear(): void {
    this.chunks.length = 1;
    this.chunks[0]!.top = 0;
    this.free.length = 0;
  }

  /** Entries handed out from the chunks' ends (for tests: a block that moves leaves one behind). */
  get used(): number {
    let n = 0;
    for (const c of this.chunks) n += c.top;
    return n;
  }

  /** [from, to) of chunk k to the free lists, in the largest aligned pieces. */
  private freeRange(k: number, from: number, to: number): void {
    for (let at = from; at < to;) {
      let piece = 1;
      while ((at & piece) === 0 && at + piece * 2 <= to) piece *= 2;
      this.release(k, at, piece);
      at += piece;
    }
  }
}
