// Janitor browser client: collects the signals a browser offers, posts them to the identify endpoint and
// returns the answer. One dependency-free ES module; serve it as it is.
//
//   import { createVisitorClient } from "/janitor.js";
//   const client = createVisitorClient();
//   const answer = await client.identify(); // {visitorId, isReturning, ...} or null
//
// identify() resolves with the parsed answer, or with null when nothing was asked (the client is disabled or
// destroyed) or the answer was dropped (reset() or destroy() came first). It rejects with an Error whose
// `status` is the HTTP status (0 for a network failure, a timeout or an unreadable answer).
//
// collect() returns the same payload without sending it, for a form of the application to carry beside its
// own fields:  fetch("/login", {method: "POST", body: JSON.stringify({email, password, visitor: client.collect()})}).
//
// Extended signals (off by default): createVisitorClient({extendedSignals: true}) also sends, in a header, the
// settings and exact versions janitor-extended.js collects (it is loaded from beside this file only then). For a
// form, `await client.headers()` gives the header to add to the application's own request.
// With {automationEvidence: true} it loads janitor-automation.js at once and sends its header too.
//
// Privacy: the behaviour counters count events only; no position, key, form value or URL is read or sent.

const VISITOR_ID = /^vis_[a-f0-9]{48}$/;
const ATTEMPTS = 3;
const BACKOFF_BASE_MS = 1000;
const BACKOFF_CAP_MS = 5000;
const TIMEOUT_MS = 10000;
const COUNT_MAX = 1e6;
const PAGE_AGE_MAX_MS = 6048e5;
const SIZE_MAX = 32768;

const finite = (v) => typeof v == "number" && isFinite(v);
// Numbers into [0, max]; whole numbers where the payload wants integers.
const num = (v, max) => (finite(v) ? Math.min(max, Math.max(0, v)) : undefined);
const int = (v, max) => (finite(v) ? Math.round(num(v, max)) : undefined);
// Strings cut to `max` UTF-16 units, never in the middle of a surrogate pair (the server would refuse it).
const str = (v, max) => {
  if (typeof v != "string") return;
  v = v.slice(0, max);
  return /[\ud800-\udbff]$/.test(v) ? v.slice(0, -1) : v;
};
// Drops absent values; an object with nothing left is absent too.
const pack = (o) => {
  const out = {};
  let any;
  for (const k in o) if (o[k] !== undefined) (out[k] = o[k]), (any = 1);
  return any ? out : undefined;
};
const attempt = (f) => {
  try {
    return f();
  } catch {}
};

let graphicsCache;
// The masked WebGL vendor and renderer, read once from a throwaway context that is released at once.
const graphics = () =>
  graphicsCache !== undefined
    ? graphicsCache
    : (graphicsCache =
        attempt(() => {
          const gl = document.createElement("canvas").getContext("webgl");
          if (!gl) return null;
          const found = pack({
            webglVendor: str(gl.getParameter(gl.VENDOR), 512),
            webglRenderer: str(gl.getParameter(gl.RENDERER), 512),
          });
          attempt(() => gl.getExtension("WEBGL_lose_context").loseContext());
          return found || null;
        }) || null);

const signals = () => {
  const n = navigator;
  const s = screen;
  const languages = Array.isArray(n.languages)
    ? n.languages.filter((l) => typeof l == "string").slice(0, 20).map((l) => str(l, 64))
    : undefined;
  return pack({
    userAgent: str(n.userAgent, 512),
    platform: str(n.platform, 128),
    languages,
    timezone: str(attempt(() => Intl.DateTimeFormat().resolvedOptions().timeZone), 128),
    screen: pack({
      width: int(s.width, SIZE_MAX),
      height: int(s.height, SIZE_MAX),
      colorDepth: int(s.colorDepth, 64),
      pixelRatio: num(devicePixelRatio, 16),
    }),
    viewport: pack({ width: int(innerWidth, SIZE_MAX), height: int(innerHeight, SIZE_MAX) }),
    hardware: pack({
      hardwareConcurrency: int(n.hardwareConcurrency, 1024),
      deviceMemory: num(n.deviceMemory, 1024),
      maxTouchPoints: int(n.maxTouchPoints, 256),
    }),
    automation: typeof n.webdriver == "boolean" ? { webdriver: n.webdriver } : undefined,
    graphics: graphics() || undefined,
  }) || {};
};

// The optional parts, fetched from beside this file when first asked for.
let extendedPart, automationPart;

const failure = (message, status) => Object.assign(new Error(message), { status });

/**
 * A client for the identify endpoint.
 *
 * @param {{endpoint?: string, enabled?: boolean, headers?: HeadersInit, extendedSignals?: boolean, automationEvidence?: boolean}} [options]
 *   `endpoint` (default "/api/visitor"); `enabled` (default true: when false, identify() sends nothing and
 *   resolves with null until setEnabled(true)); `headers` added to every request; `extendedSignals` (default
 *   false) also sends the extended signals, `automationEvidence` the automation evidence.
 */
export function createVisitorClient({
  endpoint = "/api/visitor",
  enabled = true,
  headers,
  extendedSignals = false,
  automationEvidence = false,
} = {}) {
  const automation = automationEvidence
    ? (automationPart ||= import(new URL("janitor-automation.js", import.meta.url)))
    : null;
  const counts = {
    mouseMoveCount: 0,
    pointerDownCount: 0,
    keyDownCount: 0,
    scrollCount: 0,
    visibilityChangeCount: 0,
  };
  const listeners = [
    [window, "mousemove", "mouseMoveCount"],
    [window, "pointerdown", "pointerDownCount"],
    [window, "keydown", "keyDownCount"],
    [window, "scroll", "scrollCount"],
    [document, "visibilitychange", "visibilityChangeCount"],
  ].map(([target, type, key]) => {
    const listener = () => {
      if (counts[key] < COUNT_MAX) counts[key]++;
    };
    // Capture, so scrolls of inner elements count too; passive, so nothing waits for the counter.
    target.addEventListener(type, listener, { passive: true, capture: true });
    return () => target.removeEventListener(type, listener, { capture: true });
  });

  let destroyed = false;
  let current = null; // {promise, run}

  const behavior = () => ({
    pageAgeMs: int(performance.now(), PAGE_AGE_MAX_MS),
    ...counts,
  });

  const cancel = () => {
    if (!current) return;
    const { run } = current;
    current = null;
    run.cancelled = true;
    if (run.controller) run.controller.abort();
    if (run.wake) run.wake();
  };

  // The optional parts' headers; an automation part that cannot load sends nothing.
  const partHeaders = async () => {
    const helpers = { pack, str, int, attempt };
    const extended = extendedSignals
      ? (await (extendedPart ||= import(new URL("janitor-extended.js", import.meta.url)))).headers(helpers)
      : {};
    const automated = automation ? automation.then((part) => part.headers(helpers)).catch(() => ({})) : {};
    return { ...(await extended), ...(await automated) };
  };

  const sleep = (run, ms) =>
    new Promise((wake) => {
      const timer = setTimeout(wake, ms);
      run.wake = () => {
        clearTimeout(timer);
        wake();
      };
    });

  const send = async (run) => {
    for (let made = 1; ; made++) {
      if (run.cancelled) return null;
      const controller = (run.controller = new AbortController());
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, TIMEOUT_MS);
      try {
        const requestHeaders = new Headers(headers);
        requestHeaders.set("content-type", "application/json");
        for (const [name, value] of Object.entries(await partHeaders())) requestHeaders.set(name, value);
        if (run.cancelled) return null;
        const response = await fetch(endpoint, {
          method: "POST",
          credentials: "same-origin",
          headers: requestHeaders,
          body: JSON.stringify({ signals: signals(), behavior: behavior() }),
          signal: controller.signal,
        });
        const status = response.status;
        if (response.ok) {
          const answer = await response.json().catch(() => null);
          if (run.cancelled) return null;
          if (!answer || typeof answer.visitorId != "string" || !VISITOR_ID.test(answer.visitorId))
            throw failure("the visitor endpoint sent an unreadable answer", status);
          return answer;
        }
        if ((status == 503 || status == 429) && made < ATTEMPTS) {
          // Full jitter: anywhere up to the larger of the server's Retry-After and the exponential step.
          const retryAfter = Number(response.headers.get("retry-after"));
          const ceiling = Math.min(
            BACKOFF_CAP_MS,
            Math.max(retryAfter >= 0 ? retryAfter * 1000 : 0, BACKOFF_BASE_MS * 2 ** made)
          );
          clearTimeout(timer);
          await sleep(run, Math.random() * ceiling);
          continue;
        }
        throw failure(`the visitor endpoint answered ${status}`, status);
      } catch (error) {
        if (run.cancelled) return null;
        if (timedOut) throw failure("the visitor endpoint did not answer in time", 0);
        throw error instanceof Error && "status" in error ? error : failure(String((error && error.message) || error), 0);
      } finally {
        clearTimeout(timer);
      }
    }
  };

  return {
    /** Identifies this browser; concurrent calls share one request. */
    identify() {
      if (destroyed || !enabled) return Promise.resolve(null);
      if (current) return current.promise;
      const run = { cancelled: false };
      const entry = { run };
      entry.promise = send(run).finally(() => {
        if (current === entry) current = null;
      });
      current = entry;
      return entry.promise;
    },
    /**
     * The payload identify() would send, without sending it, for a request of the application to carry in
     * its `visitor` field (a login form, say); null when the client is disabled or destroyed.
     */
    collect() {
      if (destroyed || !enabled) return null;
      return { signals: signals(), behavior: behavior() };
    },
    /**
     * The headers the application's own request should carry beside collect()'s payload: the extended signals'
     * header when they are on, else none (an empty object); also empty when the client is disabled or destroyed.
     */
    async headers() {
      return destroyed || !enabled ? {} : partHeaders();
    },
    /** Allows (true) or stops (false) future requests; a request in flight is not affected. */
    setEnabled(value) {
      enabled = !!value;
    },
    /** Drops the request in flight (its identify() resolves with null) and zeroes the behaviour counters. */
    reset() {
      cancel();
      for (const k in counts) counts[k] = 0;
    },
    /** Removes every listener and drops the request in flight; identify() then resolves with null. */
    destroy() {
      destroyed = true;
      cancel();
      listeners.forEach((remove) => remove());
      listeners.length = 0;
    },
  };
}
