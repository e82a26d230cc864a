window.addEventListener('error',function(e){document.body.setAttribute('data-jserror',e.message)});
