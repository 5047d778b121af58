// What console/routes.ts imports from index.html: its text (`with { type: "text" }`). bun-types declares every `*.html`
// import as an HTML bundle (what a plain import of an .html file is in Bun); this declaration beside the file takes
// precedence for this one file (tsconfig's `allowArbitraryExtensions`).
declare const text: string;
export default text;
