(function(){
var f=document.getElementById('filters'),rows=document.querySelectorAll('tr.claim');
function boxes(){return Array.prototype.slice.call(f.querySelectorAll('input[name=status]'))}
function apply(){
 var st=boxes().filter(function(b){return b.checked}).map(function(b){return b.value});
 var v=f.verdict.value,e=f.expected.value,n=0;
 rows.forEach(function(r){var show=st.indexOf(r.dataset.status)>=0&&(!v||r.dataset.verdict===v)&&
  (!e||r.dataset.expected===e);r.hidden=!show;if(show)n++});
 document.querySelectorAll('tbody.group').forEach(function(g){g.hidden=!g.querySelector('tr.claim:not([hidden])')});
 document.getElementById('shown').textContent=n+' of '+rows.length+' claims shown';
 document.body.setAttribute('data-shown',n)}
function readHash(){
 var p=new URLSearchParams(location.hash.slice(1)),st=p.get('status');
 boxes().forEach(function(b){b.checked=!st||st.split(',').indexOf(b.value)>=0});
 f.verdict.value=p.get('verdict')||'';f.expected.value=p.get('expected')||'';apply()}
function writeHash(){
 var p=new URLSearchParams(),all=boxes(),on=all.filter(function(b){return b.checked});
 if(on.length<all.length)p.set('status',on.map(function(b){return b.value}).join(','));
 if(f.verdict.value)p.set('verdict',f.verdict.value);if(f.expected.value)p.set('expected',f.expected.value);
 location.hash=p.toString();apply()}
f.addEventListener('change',writeHash);window.addEventListener('hashchange',readHash);readHash();
document.body.setAttribute('data-js','ok')})();
