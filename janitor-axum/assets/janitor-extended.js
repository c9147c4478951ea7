// Janitor browser client, extended signals: settings and exact versions that tell identical devices apart
// (available screen area, userAgentData's platform version and full version list, Intl calendar, numbering
// system and hour cycle, colour-scheme, reduced-motion and contrast preferences), sent in the
// `janitor-extended-signals` header, never in the payload: a server that does not read them ignores the header,
// so the payload stays exactly the contract's. janitor.js loads this module from beside itself only when
// createVisitorClient({extendedSignals: true}) asks for them, so the default client stays small; it is not
// meant to be imported on its own.

const HEADER = "janitor-extended-signals";
const HOUR_CYCLES = ["h11", "h12", "h23", "h24"];
const SIZE_MAX = 32768;

let versionsCache;

/**
 * The extended signals' header, in the bounds the server enforces.
 *
 * @param {{pack: Function, str: Function, int: Function, attempt: Function}} helpers janitor.js's own.
 */
export async function headers({ pack, str, int, attempt }) {
  const matches = (query) => attempt(() => matchMedia(query).matches);
  // userAgentData's high-entropy values are a promise, and fixed for the page's life: asked for once. Browsers
  // without userAgentData (Safari, Firefox) give nothing.
  versionsCache ||= Promise.resolve(
    attempt(() => navigator.userAgentData.getHighEntropyValues(["platformVersion", "fullVersionList"]))
  )
    .then((v) =>
      pack({
        platformVersion: str(v && v.platformVersion, 32),
        fullVersionList: Array.isArray(v && v.fullVersionList)
          ? v.fullVersionList.slice(0, 16).map((b) => ({ brand: str(String(b.brand), 64), version: str(String(b.version), 32) }))
          : undefined,
      })
    )
    .catch(() => undefined);
  const s = screen;
  const dates = attempt(() => Intl.DateTimeFormat(undefined, { hour: "numeric" }).resolvedOptions()) || {};
  const signals =
    pack({
      screen: pack({ availWidth: int(s.availWidth, SIZE_MAX), availHeight: int(s.availHeight, SIZE_MAX) }),
      userAgentData: await versionsCache,
      intl: pack({
        calendar: str(dates.calendar, 32),
        numberingSystem: str(dates.numberingSystem, 32),
        hourCycle: HOUR_CYCLES.includes(dates.hourCycle) ? dates.hourCycle : undefined,
      }),
      preferences: pack({
        colorScheme: ["dark", "light"].find((c) => matches(`(prefers-color-scheme: ${c})`)),
        reducedMotion: matches("(prefers-reduced-motion: reduce)"),
        contrast: ["more", "less", "custom", "no-preference"].find((c) => matches(`(prefers-contrast: ${c})`)),
      }),
    }) || {};
  return { [HEADER]: base64url(JSON.stringify(signals)) };
}

// A header value is ASCII: the JSON's UTF-8 bytes in base64url, without padding.
const base64url = (text) =>
  btoa(Array.from(new TextEncoder().encode(text), (b) => String.fromCharCode(b)).join(""))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
