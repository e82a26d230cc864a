document.querySelectorAll('button[data-copy]').forEach(function(b){b.addEventListener('click',function(){
 var el=document.getElementById(b.dataset.copy),t=el.textContent;
 function select(){var r=document.createRange();r.selectNodeContents(el);var s=getSelection();
  s.removeAllRanges();s.addRange(r);b.textContent='selected (Ctrl+C)'}
 if(navigator.clipboard){navigator.clipboard.writeText(t).then(function(){b.textContent='copied'},select)}
 else select()})});
document.body.setAttribute('data-js','ok');
