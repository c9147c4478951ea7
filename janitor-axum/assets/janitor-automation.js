// Janitor client, automation evidence (docs/automation.md): loaded by createVisitorClient({automationEvidence: true}).
const DRIVER = /^(\$?cdc_|\$wdc_|__(webdriver|selenium|driver|fxdriver|nightmare|playwright|pw[A-Z_]|puppeteer)|_(selenium|Selenium_IDE|phantom)|callSelenium|callPhantom|domAutomation)/;
let untrusted = 0;
for (const type of ["keydown", "pointerdown", "click", "input"])
  addEventListener(type, (e) => e.isTrusted || untrusted++, { capture: true, passive: true });

// A dedicated worker's user agent, platform, languages and cores; undefined when none starts in time.
const worker = () =>
  new Promise((done) => {
    let w;
    const end = (v) => (w && w.terminate(), done(v));
    setTimeout(end, 250);
    try {
      const n = "navigator.userAgent,navigator.platform,String(navigator.languages),navigator.hardwareConcurrency";
      w = new Worker(URL.createObjectURL(new Blob([`postMessage([${n}])`])));
      w.onmessage = (e) => end(e.data);
      w.onerror = () => end();
    } catch {
      end();
    }
  });

export async function headers({ pack, attempt }) {
  const n = navigator;
  const brands = attempt(() => n.userAgentData.brands.map((b) => b.brand).join()) || "";
  const names = attempt(() => Object.getOwnPropertyNames(window).concat(Object.getOwnPropertyNames(document))) || [];
  const settle = (f) => Promise.resolve(attempt(f)).catch(() => {});
  const [view, versions, permission] = await Promise.all([
    worker(),
    settle(() => n.userAgentData.getHighEntropyValues(["fullVersionList"])),
    settle(() => n.permissions.query({ name: "notifications" })),
  ]);
  const page = [n.userAgent, n.platform, String(n.languages), n.hardwareConcurrency];
  const json = JSON.stringify(
    pack({
      webdriver: n.webdriver === true,
      driverGlobals: Math.min(names.filter((k) => DRIVER.test(k)).length, 32),
      headless: /Headless/.test(n.userAgent + brands),
      workerMismatch: view && view.some((v, i) => v !== page[i]),
      emptyVersionList: versions && !(versions.fullVersionList || []).length,
      noPointer: attempt(() => matchMedia("(any-pointer: none)").matches),
      pluginsEmpty: !n.plugins.length,
      chromeMissing: /Chrome\//.test(n.userAgent) && typeof window.chrome != "object",
      noFrame: outerWidth > 0 && outerHeight == innerHeight && outerWidth == innerWidth,
      windowOverScreen: outerWidth > screen.width || outerHeight > screen.height,
      permissionsMismatch: !!permission && permission.state == "prompt" && window.Notification && Notification.permission == "denied",
      untrustedInput: Math.min(untrusted, 1000),
    })
  );
  return { "janitor-automation-evidence": btoa(json).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "") };
}
