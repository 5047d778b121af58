// The console's icon, imported as text (`with { type: "text" }`). `*.js` and `*.css` are declared in docs/assets.d.ts;
// `*.html` by bun-types (as Bun's HTML bundle: routes.ts says why it is text here).
declare module "*.svg" {
  const text: string;
  export default text;
}
