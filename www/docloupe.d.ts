// Types of docloupe's JS API (docloupe.js) and of the search contract it speaks.

/** Where a file comes from: a URL (absolute or relative to the page) or its bytes. */
export type Source = string | URL | ArrayBuffer | ArrayBufferView;

export interface EmbeddingModelSources {
  /** The int8 ONNX the bundle was built with (checked by sha256 before it loads). */
  onnx: Source;
  tokenizer: Source;
}

export interface RerankerSources {
  manifest: Source;
  onnx: Source;
  tokenizer: Source;
}

export interface ModelSources {
  embedding: EmbeddingModelSources;
  /** Without it, hybrid answers the fused order with `degradedReason: "rerank_model_unavailable"`. */
  reranker?: RerankerSources;
}

export interface OpenOptions {
  /**
   * The bundle file (URL or bytes), or a split bundle's directory (a URL ending in "/", from
   * `index-builder split`): then only core.bin is fetched at open and each search fetches the
   * shards it needs.
   */
  bundle: Source;
  /** Loaded in the background after the lexical engine answers; omit for fulltext only. */
  models?: ModelSources | false;
  /** Run the engine in a Web Worker (default true); falls back to the calling thread. */
  worker?: boolean;
  /**
   * The models' arithmetic: "fast" (default; tract's simd128 kernels) or "portable" (the
   * pkg/portable build without simd128, answers byte-identical to the native engine run with
   * `--kernels portable`; inference 2–4× slower).
   */
  kernels?: 'fast' | 'portable';
  /**
   * How long the rerank stage may take per search, in milliseconds (default 2000, as natively);
   * past it the fused order comes back with `degradedReason: "rerank_budget_exceeded"`.
   */
  rerankBudgetMs?: number;
  /**
   * Where the wasm builds are; defaults to pkg/{lexical,full,portable}/docloupe_bg.wasm beside
   * this module, and pkg/inflate/inflate.wasm (the lexical build's inflater, loaded for a whole
   * bundle only).
   */
  wasm?: { lexical?: Source; full?: Source; portable?: Source; inflate?: Source };
  onStatus?: (status: EngineStatus) => void;
}

export type Phase = 'loading-models' | 'ready' | 'failed' | 'closed';

export interface EngineStatus {
  /** loading-models: fulltext is served; semantic/hybrid are answered lexically, flagged. */
  phase: Phase;
  build: 'lexical' | 'full';
  /** The full build's kernels ("fast" or "portable"); null while the lexical build serves. */
  kernels: 'fast' | 'portable' | null;
  /** The engine serving now reads a split bundle (the lexical build over a split directory). */
  split: boolean;
  documents: number;
  chunks: number;
  projectId: string | null;
  /** The bundle's embedding model id, or null for a fulltext-only bundle. */
  embedding: string | null;
  semanticReady: boolean;
  rerankerReady: boolean;
  /** Milliseconds from open() to fulltext being ready, and to the models being ready. */
  openMs?: number;
  modelsMs?: number;
  /** Why loading the models failed (phase "failed"). */
  error?: ErrorResponse;
  /** The engine's wasm memory when this status was taken, in bytes (it never shrinks). */
  wasmMemoryBytes?: number;
  /** A split bundle's shard files the engine holds now, and the bound past which it lets them go. */
  splitFileBytes?: number;
  maxFileBytes?: number;
}

export type Mode = 'hybrid' | 'fulltext' | 'semantic';

export interface Filters {
  documentTypes?: string[];
  /** YYYY-MM-DD, inclusive. */
  dateFrom?: string;
  dateTo?: string;
  sourcePrefix?: string;
  tags?: string[];
}

export interface SearchRequest {
  query: string;
  limit?: number;
  /** Results to skip (0..10000): page `n` is `offset = n * limit`; pages never overlap. */
  offset?: number;
  mode?: Mode;
  rerank?: boolean;
  candidateLimit?: number;
  filters?: Filters;
  maxChunksPerDocument?: number;
  includeContext?: boolean;
  /** Results carry `text`: the chunk's text trimmed to this many characters (1..20000). */
  maxCharsPerChunk?: number;
  workspacePath?: string;
  projectId?: string;
}

export interface RankingSignals {
  lexical: number;
  semantic: number;
  rerank?: number;
}

export interface Highlight {
  start: number;
  end: number;
}

export interface ContextChunk {
  position: 'before' | 'after';
  chunkIndex: number;
  chunkId: string;
  sectionPath: string[];
  anchor: string;
  lineStart: number;
  lineEnd: number;
  pageStart?: number;
  pageEnd?: number;
  text: string;
}

/** A document's bibliography entry (collections built with `--references`). */
export interface Citation {
  citekey: string;
  title: string | null;
  /** "Family, Given" or a literal name. */
  authors: string[];
  year: number | null;
  doi: string | null;
  url: string | null;
  tags: string[];
  collections: string[];
}

export interface SearchResult {
  documentPath: string;
  chunkIndex: number;
  chunkId: string;
  title: string;
  sectionPath: string[];
  anchor: string;
  lineStart: number;
  lineEnd: number;
  /** Pages (1-based, inclusive) for paged formats (PDF); absent for others. */
  pageStart?: number;
  pageEnd?: number;
  snippet: string;
  highlights: Highlight[];
  /** 0..1 in every mode (fulltext: 2x/(2x+1) of bm25/Σidf; after the second stage, its probability). */
  score: number;
  sourceType: string;
  documentType: string;
  /** The document's date (YYYY-MM-DD): last updated, else made. */
  date?: string;
  /** When the document was made (YYYY-MM-DD), where it says. */
  created?: string;
  /** The source file's size in bytes. */
  fileSize?: number;
  rankingSignals: RankingSignals;
  citation?: Citation;
  /** With `maxCharsPerChunk`: the chunk's text, trimmed. */
  text?: string;
  context?: ContextChunk[];
}

export interface SearchResponse {
  query: string;
  total: number;
  appliedStrategy: string;
  fallbackApplied: boolean;
  /**
   * Present only when the response is not what was asked for: `models_loading`,
   * `rerank_model_unavailable`, `rerank_failed`, `rerank_budget_exceeded`.
   */
  degradedReason?: string;
  results: SearchResult[];
  /** Over every match (not only the page); `undated`: matching documents without a date. */
  facets: { documentTypes: Record<string, number>; dates: Record<string, number>; undated: number };
  suggestions: string[];
  timings: { totalMs: number; embedMs: number; retrieveMs: number; rerankMs: number };
}

export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'SEARCH_QUERY_EMPTY'
  | 'DOCS_COLLECTION_UNAVAILABLE'
  | 'DOCS_RERANKING_UNAVAILABLE'
  | 'INTERNAL_ERROR';

export interface ErrorResponse {
  errorCode: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export declare class Docloupe {
  /** Resolves once fulltext works; rejects with an ErrorResponse. */
  static open(options: OpenOptions): Promise<Docloupe>;
  /** Resolves when loading ends (phase "ready" or "failed"). */
  readonly ready: Promise<EngineStatus>;
  readonly thread: 'worker' | 'main-thread';
  /** Never rejects: the response, or the contract's error object. */
  search(request: SearchRequest): Promise<SearchResponse | ErrorResponse>;
  status(): EngineStatus;
  onStatus(listener: (status: EngineStatus) => void): () => void;
  close(): void;
}

export default Docloupe;
