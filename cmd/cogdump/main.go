package main
import ("fmt";"os";"meridian/internal/cog")
func main(){
 fh,_:=os.Open(os.Args[1]); st,_:=fh.Stat()
 f,err:=cog.Open(fh,st.Size(),cog.Limits{})
 if err!=nil{fmt.Println(err);return}
 fmt.Printf("geo %+v nodata %v scheme %s z %d\n",f.Geo,f.NoData,f.TilingScheme,f.ZoomLevel)
 for _,im:=range f.Images{fmt.Printf("%dx%d t%dx%d spp%d %s comp%d pred%d photo%d extra%v mask%v sub%d tables%d\n",im.Width,im.Height,im.TileWidth,im.TileHeight,im.Samples,im.DType,im.Compression,im.Predictor,im.Photometric,im.ExtraSamples,im.Mask!=nil,im.SubfileType,len(im.JPEGTables))
  if im.Mask!=nil{m:=im.Mask;fmt.Printf("   mask %s comp %d\n",m.DType,m.Compression)}
 }
 p,err:=f.Pyramid(); fmt.Println(err)
 for _,l:=range p{fmt.Println(l.Zoom,l.PX0,l.PY0,l.Aligned()); t,err:=l.Image.ReadTile(0,0); if err!=nil{fmt.Println(err)} else {fmt.Println(len(t.Data), t.Data[:8])}}
}
