// The console's icon, imported as text (`with { type: "text" }`). `*.js` and `*.css` are declared in docs/assets.d.ts;
// index.html by assets/index.d.html.ts.
declare module "*.svg" {
  const text: string;
  export default text;
}
